/**
 * Worker thread of the seeder (started by Seed.ts, never imported): generates ranges of works as
 * COPY text while the main thread loads earlier ranges into PostgreSQL. The generator is
 * deterministic, so each worker prepares the same pools and plan on its own.
 */
import { parentPort, workerData } from "node:worker_threads"
import { type ChunkTask, generateChunk, transferList } from "./CopyText.js"
import { generateWorks, prepareCatalog } from "./Generate.js"

export interface SeedWorkerData {
  readonly shioriSeedWorker: true
  readonly works: number
  readonly seed: number
  readonly nowMs: number
}

const port = parentPort
const options = workerData as SeedWorkerData | undefined
if (port !== null && options?.shioriSeedWorker === true) {
  const prepared = prepareCatalog({ works: options.works, seed: options.seed, now: new Date(options.nowMs) })
  port.on("message", (task: ChunkTask) => {
    try {
      const { data, result } = generateChunk((sink) => generateWorks(prepared, task.from, task.to, sink))
      port.postMessage({ index: task.index, counts: result, data }, transferList(data))
    } catch (error) {
      port.postMessage({
        index: task.index,
        error: error instanceof Error ? error.stack ?? error.message : String(error)
      })
    }
  })
}
