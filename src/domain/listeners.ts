// Callbacks told about something that happened (an account changed, another process committed, an address was
// rescored). One listener's failure is logged and never keeps the others from hearing, nor undoes the change.

export class Listeners<A extends unknown[] = []> {
  private list: ((...args: A) => void)[] = [];

  constructor(private readonly what: string) {}

  /** Adds a listener; returns the function that removes it. */
  add(listener: (...args: A) => void): () => void {
    this.list.push(listener);
    return () => {
      this.list = this.list.filter((l) => l !== listener);
    };
  }

  emit(...args: A): void {
    for (const listener of this.list) {
      try {
        listener(...args);
      } catch (error) {
        console.error(`${this.what} listener failed:`, error);
      }
    }
  }
}
