/**
 * A map bounded by the summed weight of its values (their size, roughly in bytes) and by each
 * entry's age, dropping the least recently used first: the storage of the read cache. A value weighing more than an eighth of the budget is not kept at all.
 */
interface Entry<V> {
  readonly value: V
  readonly weight: number
  readonly expires: number
}

export interface ByteLru<V> {
  /** The value of `key` if it has not expired (it becomes the most recently used), else undefined. */
  readonly get: (key: string) => V | undefined
  /** Keeps `value` for the lifetime given at creation, evicting the least recently used beyond the budget. */
  readonly set: (key: string, value: V, weight: number) => void
  readonly clear: () => void
  readonly size: () => number
}

export const makeByteLru = <V>(options: { readonly maxWeight: number; readonly ttlMs: number }): ByteLru<V> => {
  const entries = new Map<string, Entry<V>>()
  let total = 0

  const remove = (key: string, entry: Entry<V>) => {
    entries.delete(key)
    total -= entry.weight
  }

  const get = (key: string): V | undefined => {
    const entry = entries.get(key)
    if (entry === undefined) return undefined
    remove(key, entry)
    if (entry.expires <= Date.now()) return undefined
    // Most recently used last: re-insert.
    entries.set(key, entry)
    total += entry.weight
    return entry.value
  }

  const set = (key: string, value: V, weight: number) => {
    if (weight > options.maxWeight / 8) return
    const previous = entries.get(key)
    if (previous !== undefined) remove(key, previous)
    entries.set(key, { value, weight, expires: Date.now() + options.ttlMs })
    total += weight
    for (const [oldest, entry] of entries) {
      if (total <= options.maxWeight) break
      remove(oldest, entry)
    }
  }

  const clear = () => {
    entries.clear()
    total = 0
  }

  return { get, set, clear, size: () => entries.size }
}
