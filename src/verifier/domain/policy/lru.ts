/** A bounded map that forgets the least recently used entry first (Map keeps insertion order). */
export class Lru<K, V> {
  private readonly map = new Map<K, V>()
  evictions = 0

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`LRU capacity must be a positive integer, got ${capacity}`)
  }

  get size(): number {
    return this.map.size
  }

  /** The value, now the most recently used; undefined when absent. */
  get(key: K): V | undefined {
    const value = this.map.get(key)
    if (value === undefined) return undefined
    this.map.delete(key)
    this.map.set(key, value)
    return value
  }

  has(key: K): boolean {
    return this.map.has(key)
  }

  /** Stores the value as the most recently used, evicting the least recently used past capacity. */
  set(key: K, value: V): void {
    this.map.delete(key)
    this.map.set(key, value)
    while (this.map.size > this.capacity) {
      const oldest = this.map.keys().next().value as K
      this.map.delete(oldest)
      this.evictions++
    }
  }

  keys(): ReadonlyArray<K> {
    return [...this.map.keys()]
  }
}
