// A small least-recently-used map (DeerFlow memoizes skill rendering with functools.lru_cache).

/** A Map bounded to `max` entries; reading an entry makes it the most recently used. */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>();

  /** @param max Most entries kept (at least 1); the least recently used is evicted first. */
  constructor(readonly max: number) {}

  /** The value for `key` (refreshing its recency), or undefined. */
  get(key: K): V | undefined {
    if (!this.map.has(key)) return undefined;
    const value = this.map.get(key) as V;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  /** Stores `value` as the most recently used entry, evicting the oldest beyond `max`. */
  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > Math.max(1, this.max)) this.map.delete(this.map.keys().next().value as K);
  }

  /** Removes `key`; returns whether it was there. */
  delete(key: K): boolean {
    return this.map.delete(key);
  }

  /** Number of entries. */
  get size(): number {
    return this.map.size;
  }

  /** Drops every entry. */
  clear(): void {
    this.map.clear();
  }
}
