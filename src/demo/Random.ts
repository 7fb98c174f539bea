/**
 * A small, fast, seedable PRNG (sfc32) with the helpers the demo generator needs. Every entity draws
 * from its own stream (`Rng.for(seed, stream, id)`), so any table can be produced without replaying
 * the others, and the output depends only on (works, seed) and the reference date.
 */

const mix32 = (h: number, v: number): number => {
  let x = (h ^ Math.imul(v | 0, 0x9e3779b1)) >>> 0
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b) >>> 0
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35) >>> 0
  return (x ^ (x >>> 16)) >>> 0
}

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
const opaqueChars = alphabet + "_-"
const scratch = Buffer.alloc(64)

export class Rng {
  private a: number
  private b: number
  private c: number
  private d: number

  constructor(seed: number) {
    this.a = mix32(seed, 0x243f6a88)
    this.b = mix32(seed, 0x85a308d3)
    this.c = mix32(seed, 0x13198a2e)
    this.d = mix32(seed, 0x03707344)
    for (let i = 0; i < 12; i++) this.next()
  }

  /** A stream for one entity: independent of every other (stream, id) pair. */
  static for(seed: number, stream: number, id: number): Rng {
    return new Rng(mix32(mix32(mix32(seed, stream), id), Math.floor(id / 4294967296)))
  }

  /** Uniform unsigned 32-bit integer. */
  next(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0
    this.d = (this.d + 1) >>> 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) >>> 0
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0
    this.c = (this.c + t) >>> 0
    return t
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.next() / 4294967296
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n)
  }

  /** Uniform integer in [lo, hi]. */
  range(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1)
  }

  chance(p: number): boolean {
    return this.float() < p
  }

  pick<A>(items: ReadonlyArray<A>): A {
    return items[this.int(items.length)]
  }

  /** Index drawn with the given relative weights. */
  weighted(weights: ReadonlyArray<number>): number {
    let total = 0
    for (const w of weights) total += w
    let u = this.float() * total
    for (let i = 0; i < weights.length; i++) {
      u -= weights[i]
      if (u < 0) return i
    }
    return weights.length - 1
  }

  /** Random opaque id: 120 bits as 20 characters of [A-Za-z0-9_-]. */
  opaque(): string {
    let out = ""
    for (let i = 0; i < 4; i++) {
      const x = this.next()
      out += opaqueChars[x & 63] + opaqueChars[(x >>> 6) & 63] + opaqueChars[(x >>> 12) & 63] +
        opaqueChars[(x >>> 18) & 63] + opaqueChars[(x >>> 24) & 63]
    }
    return out
  }

  /** Random lowercase hex of `words` x 32 bits. */
  hex(words: number): string {
    for (let i = 0; i < words; i++) scratch.writeUInt32BE(this.next(), i * 4)
    return scratch.toString("hex", 0, words * 4)
  }

  /** Random bytes (at most 64), base64 encoded. */
  base64(bytes: number): string {
    for (let i = 0; i < bytes; i++) scratch[i] = this.next() & 0xff
    return scratch.toString("base64", 0, bytes)
  }

  /** Approximately normal (Irwin-Hall of four uniforms). */
  normal(mean: number, sd: number): number {
    const s = this.float() + this.float() + this.float() + this.float() - 2
    return mean + s * sd * 1.7320508
  }
}

/**
 * Zipf-like picking over `n` ranked items (rank 0 is the most frequent): weight 1 / (rank + 1)^s.
 * `order` maps a rank to an item, so popularity is not tied to id order.
 */
export class Zipf<A> {
  private readonly cumulative: Float64Array

  constructor(private readonly order: ReadonlyArray<A>, exponent: number) {
    this.cumulative = new Float64Array(order.length)
    let total = 0
    for (let i = 0; i < order.length; i++) {
      total += 1 / Math.pow(i + 1, exponent)
      this.cumulative[i] = total
    }
  }

  get size(): number {
    return this.order.length
  }

  pick(rng: Rng): A {
    const u = rng.float() * this.cumulative[this.cumulative.length - 1]
    let lo = 0
    let hi = this.cumulative.length - 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (this.cumulative[mid] > u) hi = mid
      else lo = mid + 1
    }
    return this.order[lo]
  }
}

/** A deterministic permutation of `items`. */
export const shuffled = <A>(items: ReadonlyArray<A>, rng: Rng): Array<A> => {
  const out = items.slice()
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1)
    const t = out[i]
    out[i] = out[j]
    out[j] = t
  }
  return out
}
