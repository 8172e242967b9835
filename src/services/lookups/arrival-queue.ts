// The answers of the answer cache in the order they were cached, so that a full cache evicts its oldest answer.
// A Map keeps insertion order too, but JavaScriptCore's Map leaves a deleted entry in place until it rehashes,
// and `keys().next()` walks over every one of them: taking the oldest key of a map that keeps 200,000 answers
// while evicting went from 7 to 150 µs per answer, then back after a rehash (measured; a lookup is ~10 µs).
//
// Entries are never removed early: an answer dropped for another reason (its address changed, it expired) leaves
// its entry behind, and the owner tells by the token whether an entry is still its current answer. The owner
// calls `retain` when stale entries are most of the queue.

export class ArrivalQueue<K> {
  private keys: K[] = [];
  private tokens: number[] = [];
  private head = 0;

  /** Entries queued, stale ones included. */
  get size(): number {
    return this.keys.length - this.head;
  }

  push(key: K, token: number): void {
    this.keys.push(key);
    this.tokens.push(token);
  }

  /**
   * Takes entries from the front until one is current (`isCurrent(key, token)`), and returns its key; the stale
   * ones before it are gone too. Undefined when no entry is current.
   */
  takeOldest(isCurrent: (key: K, token: number) => boolean): K | undefined {
    const { keys, tokens } = this;
    while (this.head < keys.length) {
      const at = this.head++;
      const key = keys[at];
      const token = tokens[at];
      keys[at] = undefined as K;
      if (isCurrent(key, token)) {
        this.compactIfHalfTaken();
        return key;
      }
    }
    this.clear();
    return undefined;
  }

  /** Keeps only the entries for which `isCurrent` holds, in their order. */
  retain(isCurrent: (key: K, token: number) => boolean): void {
    const keys: K[] = [];
    const tokens: number[] = [];
    for (let at = this.head; at < this.keys.length; at++) {
      if (!isCurrent(this.keys[at], this.tokens[at])) continue;
      keys.push(this.keys[at]);
      tokens.push(this.tokens[at]);
    }
    this.keys = keys;
    this.tokens = tokens;
    this.head = 0;
  }

  clear(): void {
    this.keys = [];
    this.tokens = [];
    this.head = 0;
  }

  /** Drops the taken front once it is half of the arrays, so taking stays O(1) on average. */
  private compactIfHalfTaken(): void {
    if (this.head < 1024 || this.head * 2 < this.keys.length) return;
    this.keys = this.keys.slice(this.head);
    this.tokens = this.tokens.slice(this.head);
    this.head = 0;
  }
}
