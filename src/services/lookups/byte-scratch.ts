// A growing buffer that bytes are appended to. Mostly bytes written during one request and read before it ends:
// the answers of never-reported addresses, made as UTF-8 bytes from their parts (no string per answer for the
// collector), then handed to a Response, which copies them, or copied into a bulk check's body (`reset()` at the
// start of each request; views are good until then). Never reset, it is the arena of the answers' tails.

const INITIAL_BYTES = 64 * 1024;

export class ByteScratch {
  private bytes = Buffer.alloc(INITIAL_BYTES);
  /** The same memory as a plain Uint8Array, for the views handed out. */
  private plain = new Uint8Array(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  /** Where the next byte goes. */
  at = 0;

  reset(): void {
    this.at = 0;
  }

  /** Appends text known to be ASCII (an address, JSON punctuation): one byte a character. */
  putAscii(text: string): void {
    this.ensureRoom(text.length);
    this.at += this.bytes.write(text, this.at, "latin1");
  }

  putBytes(bytes: Uint8Array): void {
    this.ensureRoom(bytes.length);
    this.plain.set(bytes, this.at);
    this.at += bytes.length;
  }

  /** Appends `source`'s bytes from `from` to `to` (no view made for them). */
  putSlice(source: Buffer, from: number, to: number): void {
    this.ensureRoom(to - from);
    this.at += source.copy(this.bytes, this.at, from, to);
  }

  putByte(byte: number): void {
    this.ensureRoom(1);
    this.plain[this.at++] = byte;
  }

  /** The memory written to, for copying a part out without a view (Buffer.copy); good until the next put. */
  get buffer(): Buffer {
    return this.bytes;
  }

  /** The bytes from `from` to `to` as a view, good until the next reset. */
  view(from: number, to: number): Uint8Array {
    return this.plain.subarray(from, to);
  }

  private ensureRoom(size: number): void {
    if (this.at + size <= this.plain.length) return;
    const old = this.plain;
    this.bytes = Buffer.alloc(Math.max(2 * old.length, this.at + size));
    this.plain = new Uint8Array(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
    this.plain.set(old.subarray(0, this.at));
  }
}
