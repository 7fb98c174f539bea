#!/bin/sh
# Builds the image of the Containerfile and probes it (docs/deploying.md, "Container image"):
#
#   1. the image holds no build tools and runs as an unprivileged user;
#   2. without SHIORI_SECRET it refuses to start (it listens on 0.0.0.0, so it counts as production);
#   3. on the embedded PostgreSQL, its data on a volume, ports published on loopback: both servers
#      get ready, an API key made with the operator CLI reads the catalog, the identity provider
#      answers discovery; SIGTERM stops it with exit status 0 and a cleanly stopped cluster; started
#      again on the same volume it serves the same data;
#   4. with SMOKE_ADMIN_DATABASE_URL (a PostgreSQL superuser URL the host reaches, e.g.
#      postgres://postgres@127.0.0.1:5432/postgres): the same with DATABASE_URL on a database it
#      creates and drops (shiori_container_test), over the host's network.
#
# Needs podman and curl. Everything it starts is removed at the end (the images are kept).
#
#   sh scripts/container-smoke.sh
#   SMOKE_ADMIN_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test sh scripts/container-smoke.sh
#
# Settings: IMAGE (localhost/shiori:latest), SMOKE_CATALOG_PORT / SMOKE_IDENTITY_PORT (18080 / 18081,
# on 127.0.0.1), BUILD_OPTS and RUN_OPTS (extra options of `podman build` / `podman run`), SKIP_BUILD=1.
set -eu
cd "$(dirname "$0")/.."

IMAGE=${IMAGE:-localhost/shiori:latest}
BASE=localhost/shiori-base:bookworm
CATALOG_PORT=${SMOKE_CATALOG_PORT:-18080}
IDENTITY_PORT=${SMOKE_IDENTITY_PORT:-18081}
ADMIN_URL=${SMOKE_ADMIN_DATABASE_URL:-}
BUILD_OPTS=${BUILD_OPTS-}
RUN_OPTS=${RUN_OPTS-}
NAME=shiori-smoke
VOLUME=shiori-smoke-data
TEST_DATABASE=shiori_container_test

say() { printf '\n== %s\n' "$*"; }
fail() { printf 'FAILED: %s\n' "$*" >&2; exit 1; }

# `podman run` with RUN_OPTS; the runtime options chosen below come first.
RUNTIME=
prun() { podman $RUNTIME run $RUN_OPTS "$@"; }

dropped_database=1
cleanup() {
  podman rm -f -v "$NAME" "$NAME-db" >/dev/null 2>&1 || true
  podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  if [ "$dropped_database" = 0 ]; then admin_sql "DROP DATABASE IF EXISTS $TEST_DATABASE WITH (FORCE)" || true; fi
}
trap cleanup EXIT INT TERM

sh scripts/container-base.sh

# Some hosts cannot run a container with podman's defaults: crun refuses a cgroup v2 hierarchy
# that has controllers next to v1 ones ("cgroups in hybrid mode not supported"), and without
# CAP_SYS_RESOURCE podman's default rlimits cannot be set. Then RUN steps are built with chroot
# isolation, and containers run under runc with rlimits within the host's.
if ! probe=$(podman run --rm $RUN_OPTS --entrypoint /bin/true "$BASE" 2>&1); then
  say "podman run with the defaults fails here: $probe"
  BUILD_OPTS="--isolation chroot $BUILD_OPTS"
  command -v runc >/dev/null && RUNTIME="--runtime runc"
  RUN_OPTS="--ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=4096:4096 $RUN_OPTS"
  echo "retrying with: podman $RUNTIME run $RUN_OPTS (and podman build $BUILD_OPTS)"
  prun --rm --entrypoint /bin/true "$BASE" || fail "podman cannot run a container on this host"
fi

if [ "${SKIP_BUILD:-0}" != 1 ]; then
  say "podman build -t $IMAGE -f Containerfile ."
  # A TLS-inspecting proxy's CA bundle, when Node is told about one, reaches npm as a build secret.
  secret=
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    secret="--secret id=extra-ca,src=$NODE_EXTRA_CA_CERTS"
  fi
  podman build $BUILD_OPTS $secret -t "$IMAGE" -f Containerfile . >/tmp/shiori-container-build.log 2>&1 ||
    { tail -40 /tmp/shiori-container-build.log; fail "podman build (log: /tmp/shiori-container-build.log)"; }
  grep -E '^(node v|sharp )' /tmp/shiori-container-build.log || true
fi
echo "image $IMAGE: $(podman image inspect --format '{{.Size}}' "$IMAGE" | awk '{ printf "%.0f MB", $1 / 1000000 }')"

say "no build tools in the image; who runs it"
prun --rm --entrypoint /bin/sh "$IMAGE" -c '
  found=0
  for tool in gcc g++ cc c++ make python3 esbuild tsc tsx npm npx; do
    if command -v "$tool"; then found=1; fi
  done
  for dir in /app/node_modules/esbuild /app/node_modules/@esbuild /app/node_modules/tsx /app/node_modules/typescript; do
    if [ -e "$dir" ]; then echo "$dir"; found=1; fi
  done
  echo "user $(id -un) ($(id -u)), node $(node --version), $(. /etc/os-release && echo "$PRETTY_NAME")"
  exit $found' || fail "build tools found in the image"
echo "none of gcc g++ cc c++ make python3 esbuild tsc tsx npm npx"

say "without SHIORI_SECRET the image refuses to start"
if out=$(prun --rm "$IMAGE" 2>&1); then fail "it started: $out"; fi
echo "$out" | grep -o 'SHIORI_SECRET[^"]*' | head -1

secret=$(head -c 36 /dev/urandom | base64 | tr -d '\n')

wait_ready() { # url
  tries=0
  until curl -fsS -o /dev/null "$1" 2>/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -ge 120 ] || [ "$(podman inspect --format '{{.State.Running}}' "$2")" != true ]; then
      podman logs "$2" 2>&1 | tail -30
      fail "$1 not ready"
    fi
    sleep 1
  done
  echo "$1: $(curl -sS "$1")"
}

probe_service() { # container
  wait_ready "http://127.0.0.1:$CATALOG_PORT/readyz" "$1"
  wait_ready "http://127.0.0.1:$IDENTITY_PORT/readyz" "$1"
  if [ -z "${api_key:-}" ]; then
    api_key=$(podman exec "$1" node dist/src/cli/main.js api-key create --site smoke --scopes catalog:read --json |
      sed -n 's/.*"key":"\([^"]*\)".*/\1/p')
    [ -n "$api_key" ] || fail "api-key create printed no key"
    echo "operator CLI in the container: api-key create --site smoke --scopes catalog:read -> ${api_key%"${api_key#????????}"}..."
  fi
  works=$(curl -sS -w '\n%{http_code}' -H "Authorization: Bearer $api_key" \
    "http://127.0.0.1:$CATALOG_PORT/v2/catalog/works?limit=2")
  [ "$(echo "$works" | tail -1)" = 200 ] || fail "GET /v2/catalog/works: $works"
  echo "GET /v2/catalog/works?limit=2 -> 200 $(echo "$works" | head -1 | cut -c1-160)..."
  discovery=$(curl -sS -w '\n%{http_code}' "http://127.0.0.1:$IDENTITY_PORT/api/v1/.well-known/openid-configuration")
  [ "$(echo "$discovery" | tail -1)" = 200 ] || fail "discovery: $discovery"
  echo "GET /api/v1/.well-known/openid-configuration -> 200 $(echo "$discovery" | head -1 | cut -c1-120)..."
}

stop_cleanly() { # container
  podman stop -t 60 "$1" >/dev/null
  status=$(podman inspect --format '{{.State.ExitCode}}' "$1")
  podman logs "$1" 2>&1 | tail -3
  [ "$status" = 0 ] || fail "exit status $status after SIGTERM"
  echo "SIGTERM: exit status 0"
}

say "embedded PostgreSQL on volume $VOLUME, ports published on 127.0.0.1"
podman volume rm -f "$VOLUME" >/dev/null 2>&1 || true
podman volume create "$VOLUME" >/dev/null
prun -d --name "$NAME" \
  -v "$VOLUME:/var/lib/shiori" \
  -p "127.0.0.1:$CATALOG_PORT:$CATALOG_PORT" -p "127.0.0.1:$IDENTITY_PORT:$IDENTITY_PORT" \
  -e SHIORI_SERVE=all -e CATALOG_PORT="$CATALOG_PORT" -e IDENTITY_PORT="$IDENTITY_PORT" \
  -e SHIORI_SECRET="$secret" \
  -e CATALOG_PUBLIC_URL="http://127.0.0.1:$CATALOG_PORT" \
  -e IDENTITY_ISSUER="http://127.0.0.1:$IDENTITY_PORT/api/v1" \
  -e SHIORI_DEMO_WORKS=200 \
  "$IMAGE" >/dev/null
probe_service "$NAME"
stop_cleanly "$NAME"
prun --rm -v "$VOLUME:/var/lib/shiori" --entrypoint /bin/sh "$IMAGE" -c \
  'ls -ld /var/lib/shiori/postgres | cut -d" " -f1,3,4; test ! -e /var/lib/shiori/postgres/postmaster.pid' ||
  fail "the embedded cluster was not shut down (postmaster.pid left behind)"
echo "the embedded cluster stopped cleanly (no postmaster.pid left)"

say "started again on the same volume (the API key made before the restart must still read)"
podman start "$NAME" >/dev/null
probe_service "$NAME"
stop_cleanly "$NAME"
podman rm -f -v "$NAME" >/dev/null

if [ -z "$ADMIN_URL" ]; then
  say "DATABASE_URL: skipped (set SMOKE_ADMIN_DATABASE_URL)"
  say "all checks passed"
  exit 0
fi

# SQL on the server of ADMIN_URL, through the image's own node and pg.
admin_sql() {
  prun --rm --network host -e ADMIN_URL="$ADMIN_URL" -e SQL="$1" --entrypoint node "$IMAGE" --input-type=module -e '
    import Pg from "pg"
    const client = new Pg.Client({ connectionString: process.env.ADMIN_URL })
    await client.connect()
    await client.query(process.env.SQL)
    await client.end()'
}
# ADMIN_URL with its database replaced by TEST_DATABASE.
database_url=$(printf '%s' "$ADMIN_URL" | sed -E "s#^([a-z]+://[^/]*)(/[^?]*)?#\\1/$TEST_DATABASE#")

say "DATABASE_URL=$(printf '%s' "$database_url" | sed -E 's#//[^@/]*@#//***@#'), host network"
admin_sql "DROP DATABASE IF EXISTS $TEST_DATABASE WITH (FORCE)"
dropped_database=0
admin_sql "CREATE DATABASE $TEST_DATABASE"
api_key=
prun -d --name "$NAME-db" --network host \
  -e HOST=127.0.0.1 -e SHIORI_SERVE=all -e CATALOG_PORT="$CATALOG_PORT" -e IDENTITY_PORT="$IDENTITY_PORT" \
  -e SHIORI_SECRET="$secret" \
  -e DATABASE_URL="$database_url" \
  -e SHIORI_DEMO_WORKS=50 \
  "$IMAGE" >/dev/null
probe_service "$NAME-db"
stop_cleanly "$NAME-db"
podman rm -f -v "$NAME-db" >/dev/null
admin_sql "DROP DATABASE $TEST_DATABASE WITH (FORCE)"
dropped_database=1
echo "dropped $TEST_DATABASE"

say "all checks passed"
