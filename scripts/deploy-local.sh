#!/usr/bin/env bash
# The topology of docs/deploying.md ("The topology, step by step") on loopback: a PostgreSQL primary
# and its replica, service processes, haproxy in front (scripts/deploy-local.ts). Needs haproxy
# (`apt-get install haproxy`). Arguments go to scripts/deploy-local.ts.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v haproxy >/dev/null || { echo "haproxy is not installed (apt-get install haproxy)" >&2; exit 1; }
npm run -s build
exec npm exec --silent -- tsx scripts/deploy-local.ts "$@"
