/**
 * Brings up the topology of docs/deploying.md ("The topology, step by step") on loopback and keeps
 * it up until Ctrl-C or SIGTERM (scripts/deploy-local.sh builds first and runs this). SIGHUP, or
 * `--restart-rolling` once everything is up, restarts the processes one at a time.
 *
 *   scripts/deploy-local.sh [--processes N] [--catalog-port P] [--identity-port P] [--restart-rolling]
 */
import { Effect, Exit, Scope } from "effect"
import { startTopology } from "./local-topology.js"

const args = process.argv.slice(2)
const option = (name: string) => {
  const at = args.indexOf(name)
  return at >= 0 ? Number(args[at + 1]) : undefined
}

const main = async () => {
  const scope = Effect.runSync(Scope.make())
  const topology = await Effect.runPromise(
    startTopology({
      processes: option("--processes") ?? 2,
      catalogPort: option("--catalog-port") ?? 0,
      identityPort: option("--identity-port") ?? 0,
      log: (line) => process.stderr.write(`${line}\n`)
    }).pipe(Scope.provide(scope))
  )
  const stop = async () => {
    process.stdout.write("stopping\n")
    await Effect.runPromise(Scope.close(scope, Exit.void))
    process.exit(0)
  }
  process.once("SIGINT", stop)
  process.once("SIGTERM", stop)
  process.stdout.write(
    [
      `catalog:  ${topology.catalog}`,
      `identity: ${topology.identity} (issuer ${topology.issuer})`,
      ...topology.processes.map((p) =>
        `${p.name}: catalog :${p.catalogPort}, identity :${p.identityPort}, metrics :${p.metricsPort}`
      ),
      `DATABASE_URL=${topology.env.DATABASE_URL}`,
      `DATABASE_READ_URL=${topology.env.DATABASE_READ_URL}`,
      `Ctrl-C stops everything; kill -HUP ${process.pid} restarts the processes one at a time.`
    ].join("\n") + "\n"
  )
  let restarting = false
  const rolling = async () => {
    if (restarting) return
    restarting = true
    await topology.rollingRestart((name) => process.stdout.write(`restarted ${name}, back in rotation\n`))
    restarting = false
  }
  process.on("SIGHUP", () => void rolling())
  if (args.includes("--restart-rolling")) await rolling()
}

main().catch((e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`)
  process.exit(1)
})
