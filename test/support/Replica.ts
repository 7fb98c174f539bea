/**
 * A PostgreSQL primary with a streaming hot-standby replica for the tests: the one implementation in
 * src/platform/ReplicatedPostgres.ts, which the loopback topology (scripts/deploy-local.ts) runs too.
 */
export { type ReplicatedPostgres, startReplicatedPostgres } from "../../src/platform/ReplicatedPostgres.js"
