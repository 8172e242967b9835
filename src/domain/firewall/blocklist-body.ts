// Reads the appliance's blocklist in the `nft` or `ipset` format (contract 5.10, src/domain/blocklist/formats.ts)
// as it arrives, line by line, giving each entry with its family, and tells a complete list from anything else:
// the header's count must equal the entries read, and the script must have ended where that format ends (the
// element statement closed; both families swapped), so a cut body, an empty one or an HTML page is refused.

import type { IpVersion } from "../ip";

export type PulledFormat = "nft" | "ipset";

/** Called once per entry: an address or a network in CIDR form, as the appliance wrote it. */
export type EntrySink = (version: IpVersion, entry: string) => void;

const HEADER = /^# abuse-intel blocklist generated at \S+: (\d+) entr(?:y|ies) \(/;
// What an entry may hold: an address or a network. Anything else (a brace, a semicolon) would change the
// meaning of the script written from it.
const ENTRY_4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?:\/\d{1,2})?$/;
const ENTRY_6 = /^[0-9a-f:.]{2,45}(?:\/\d{1,3})?$/;
// The names the appliance's scripts use (formats.ts NFT_TABLE, SET_NAMES).
const NFT_ELEMENTS = /^add element inet abuse_intel abuse_intel_v([46]) \{$/;
const NFT_FLUSH = /^flush set inet abuse_intel abuse_intel_v([46])$/;
const IPSET_ADD_4 = "add abuse_intel_v4_next ";
const IPSET_ADD_6 = "add abuse_intel_v6_next ";
const IPSET_DONE = /^destroy abuse_intel_v([46])_next$/;

export class BlocklistBodyReader {
  private readonly decoder = new TextDecoder();
  private rest = "";
  private lineNumber = 0;
  private declared = -1;
  private entries = 0;
  /** nft: the family of the open `add element` statement, 0 when none is open. */
  private open: IpVersion | 0 = 0;
  /** nft: families flushed; ipset: families swapped in and their staging set destroyed. */
  private readonly finished = new Set<IpVersion>();
  private failure: string | null = null;

  constructor(
    readonly format: PulledFormat,
    private readonly onEntry: EntrySink,
  ) {}

  /** Reads the next piece of the body; throws with the reason at the first line that is not the format's. */
  push(chunk: Uint8Array): void {
    const text = this.rest + this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
      this.line(text.slice(start, nl));
      start = nl + 1;
    }
    this.rest = text.slice(start);
    // A line longer than any the formats write: not this format (or a binary body).
    if (this.rest.length > 4096) this.fail(`line ${this.lineNumber + 1} is longer than 4096 characters`);
  }

  /** The body has ended: its count of entries, or a throw saying why it is not a complete list. */
  end(): number {
    this.push(new Uint8Array(0));
    if (this.rest !== "") this.fail(`the body ends inside a line (line ${this.lineNumber + 1}): cut short`);
    if (this.declared < 0) this.fail(this.lineNumber === 0 ? "the body is empty" : `it is not an ${this.format} blocklist of abuse-intel (no header line)`);
    if (this.open !== 0) this.fail("the body ends inside an element statement: cut short");
    for (const v of [4, 6] as const) {
      if (!this.finished.has(v)) this.fail(`the body ends before the IPv${v} set is ${this.format === "nft" ? "flushed" : "swapped in"}: cut short`);
    }
    if (this.entries !== this.declared) this.fail(`the header announces ${this.declared} entries, the body holds ${this.entries}: cut short`);
    return this.entries;
  }

  private fail(reason: string): never {
    this.failure ??= reason;
    throw new Error(this.failure);
  }

  private line(line: string): void {
    this.lineNumber++;
    if (this.failure !== null) this.fail(this.failure);
    if (this.declared < 0) {
      const header = HEADER.exec(line);
      if (header !== null) this.declared = Number(header[1]);
      else if (!(this.format === "nft" && this.lineNumber === 1 && line === "#!/usr/sbin/nft -f")) {
        this.fail(`it is not an ${this.format} blocklist of abuse-intel (line ${this.lineNumber}: ${JSON.stringify(line.slice(0, 80))})`);
      }
      return;
    }
    if (this.format === "nft") this.nftLine(line);
    else this.ipsetLine(line);
  }

  private nftLine(line: string): void {
    if (this.open !== 0) {
      if (line === "}") this.open = 0;
      else if (line.charCodeAt(0) === 9 && line.endsWith(",")) this.entry(this.open, line.slice(1, -1));
      else this.unexpected(line);
      return;
    }
    const elements = NFT_ELEMENTS.exec(line);
    if (elements !== null) {
      this.open = elements[1] === "4" ? 4 : 6;
      return;
    }
    const flushed = NFT_FLUSH.exec(line);
    if (flushed !== null) this.finished.add(flushed[1] === "4" ? 4 : 6);
    else if (!(line.startsWith("#") || line === "" || line.startsWith("add table inet abuse_intel") || line.startsWith("add set inet abuse_intel "))) this.unexpected(line);
  }

  private ipsetLine(line: string): void {
    if (line.startsWith(IPSET_ADD_4)) return this.entry(4, line.slice(IPSET_ADD_4.length));
    if (line.startsWith(IPSET_ADD_6)) return this.entry(6, line.slice(IPSET_ADD_6.length));
    const done = IPSET_DONE.exec(line);
    if (done !== null) this.finished.add(done[1] === "4" ? 4 : 6);
    else if (!(line.startsWith("#") || line === "" || /^(create|flush|swap) abuse_intel_v[46]/.test(line))) this.unexpected(line);
  }

  private entry(version: IpVersion, text: string): void {
    if (!(version === 4 ? ENTRY_4 : ENTRY_6).test(text)) this.fail(`line ${this.lineNumber} holds no IPv${version} address or network: ${JSON.stringify(text.slice(0, 80))}`);
    this.entries++;
    this.onEntry(version, text);
  }

  private unexpected(line: string): never {
    this.fail(`line ${this.lineNumber} is not part of an ${this.format} blocklist: ${JSON.stringify(line.slice(0, 80))}`);
  }
}
