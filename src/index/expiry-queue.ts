// A queue of things that stop being valid at a time: a binary min-heap of (time, key, token) in typed arrays.
// The answer cache queues each answer that expires, and at the start of a request drops those whose time has
// passed, so a lookup never reads an expiry. Entries are never removed early: the owner checks the token of a
// popped entry against what it holds now (an answer replaced since has another), and rebuilds the queue when
// it holds too many such stale entries.

export class ExpiryQueue<K> {
  private times = new Float64Array(64);
  private tokens = new Float64Array(64);
  private keys: K[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** The earliest time queued; Infinity when empty. */
  get earliest(): number {
    return this.count === 0 ? Number.POSITIVE_INFINITY : this.times[0];
  }

  push(time: number, key: K, token: number): void {
    if (this.count === this.times.length) this.grow();
    let i = this.count++;
    // Sift up: move parents later than `time` down until its place is found.
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.times[parent] <= time) break;
      this.move(parent, i);
      i = parent;
    }
    this.place(i, time, key, token);
  }

  /** Removes every entry with a time before `before`, earliest first, calling `visit` with each. */
  popBefore(before: number, visit: (key: K, token: number) => void): void {
    while (this.count > 0 && this.times[0] < before) {
      const key = this.keys[0];
      const token = this.tokens[0];
      this.removeTop();
      visit(key, token);
    }
  }

  clear(): void {
    this.count = 0;
    this.keys = [];
  }

  private removeTop(): void {
    const last = --this.count;
    const time = this.times[last];
    const key = this.keys[last];
    const token = this.tokens[last];
    this.keys[last] = undefined as K;
    if (last === 0) return;
    // Sift down: move the earlier child up until the last entry's place is found.
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= last) break;
      if (child + 1 < last && this.times[child + 1] < this.times[child]) child++;
      if (this.times[child] >= time) break;
      this.move(child, i);
      i = child;
    }
    this.place(i, time, key, token);
  }

  private move(from: number, to: number): void {
    this.place(to, this.times[from], this.keys[from], this.tokens[from]);
  }

  private place(i: number, time: number, key: K, token: number): void {
    this.times[i] = time;
    this.keys[i] = key;
    this.tokens[i] = token;
  }

  private grow(): void {
    const times = new Float64Array(this.times.length * 2);
    const tokens = new Float64Array(this.tokens.length * 2);
    times.set(this.times);
    tokens.set(this.tokens);
    this.times = times;
    this.tokens = tokens;
  }
}
