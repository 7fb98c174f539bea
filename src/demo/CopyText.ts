/**
 * PostgreSQL COPY text format for the generator's cells, collected in memory per table as 1 MiB
 * buffers (one UTF-8 encoding per row), so worker threads can hand whole ranges to the loader.
 */
import { type Cell, Json, type Sink, type TableName, tableNames } from "./Generate.js"

const needsEscape = /[\\\t\n\r]/
const escapeText = (s: string) =>
  needsEscape.test(s)
    ? s.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r")
    : s

const plainElement = /^[A-Za-z0-9_.-]+$/
const arrayElement = (s: string) => plainElement.test(s) ? s : `"${s.replace(/["\\]/g, "\\$&")}"`

/** One cell in COPY text format. */
export const encodeCell = (cell: Cell): string => {
  if (cell === null) return "\\N"
  switch (typeof cell) {
    case "string":
      return escapeText(cell)
    case "number":
      return String(cell)
    case "boolean":
      return cell ? "t" : "f"
  }
  if (cell instanceof Json) return escapeText(cell.text)
  return escapeText(`{${(cell as ReadonlyArray<string>).map(arrayElement).join(",")}}`)
}

const SIZE = 1 << 20

const encoder = new TextEncoder()

/** One table's COPY text, as a list of buffers. */
export class TableBuffer {
  private readonly full: Array<Uint8Array> = []
  private buffer = new Uint8Array(SIZE)
  private position = 0

  write(cells: ReadonlyArray<Cell>) {
    let line = encodeCell(cells[0])
    for (let i = 1; i < cells.length; i++) line += "\t" + encodeCell(cells[i])
    line += "\n"
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (this.position + line.length * 3 > SIZE) {
      this.next()
      if (line.length * 3 > SIZE) {
        this.full.push(encoder.encode(line))
        return
      }
    }
    // `encodeInto` costs less than half of `Buffer#write` per call.
    this.position += encoder.encodeInto(line, this.buffer.subarray(this.position)).written
  }

  private next() {
    if (this.position > 0) this.full.push(this.buffer.subarray(0, this.position))
    this.buffer = new Uint8Array(SIZE)
    this.position = 0
  }

  /** The buffers written so far (the writer must not be used afterwards). */
  finish(): Array<Uint8Array> {
    this.next()
    return this.full
  }
}

/** A range of works to generate (`index` orders the loads). */
export interface ChunkTask {
  readonly index: number
  readonly from: number
  readonly to: number
}

export type ChunkData = Partial<Record<TableName, Array<Uint8Array>>>

/** Runs `generate` with a sink that collects COPY text per table. */
export const generateChunk = <A>(generate: (sink: Sink) => A): { readonly result: A; readonly data: ChunkData } => {
  const tables = new Map<TableName, TableBuffer>()
  const result = generate({
    row: (table, cells) => {
      let buffer = tables.get(table)
      if (buffer === undefined) tables.set(table, buffer = new TableBuffer())
      buffer.write(cells)
    }
  })
  const data: ChunkData = {}
  for (const table of tableNames) {
    const buffer = tables.get(table)
    if (buffer !== undefined) data[table] = buffer.finish()
  }
  return { result, data }
}

/** The ArrayBuffers behind a chunk's data, for a zero-copy `postMessage`. */
export const transferList = (data: ChunkData): Array<ArrayBuffer> => {
  const list = new Set<ArrayBuffer>()
  for (const buffers of Object.values(data)) for (const b of buffers ?? []) list.add(b.buffer as ArrayBuffer)
  return [...list]
}
