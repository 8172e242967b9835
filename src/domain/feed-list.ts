// The plain lists curated publishers put out (contract section 12), read line by line:
// - FireHOL `.netset` / `.ipset`: one address or CIDR a line, `#` comments;
// - Spamhaus DROP, EDROP and DROPv6 text: `CIDR ; SBLnnnnnn`, `;` comment lines;
// - Spamhaus DROP JSON (drop_v4.json / drop_v6.json): one object a line with a `cidr` field, and a closing
//   `{"type":"metadata",…}` line;
// - blocklist.de: one address a line.
// A line that is none of these is a bad line: listed with its number and skipped, never guessed at. A CIDR
// with host bits set (`10.1.2.3/24`) is refused rather than widened: a list must never block more than it says.

import { type Cidr, tryParseCidr, tryParseIp } from "./ip";
import { Pace } from "./pace";
import { allAtOnce } from "./steps";
import type { CidrSequence } from "./packed-cidrs";

export interface FeedListError {
  /** 1-based line number in the input. */
  line: number;
  /** The line as read (cut to 200 characters). */
  input: string;
  error: string;
}

export interface FeedList {
  /** Distinct entries in the order first seen; a bare address is a /32 or /128. */
  entries: Cidr[];
  /** The first bad lines (at most 1,000 are kept). */
  errors: FeedListError[];
  /** How many lines were bad, all of them counted. */
  badLines: number;
  /** Lines read, comments and blank lines included. */
  lines: number;
}

/** A parsed list whose entries are read by index: a FeedList, or one a worker handed back packed (packed-cidrs.ts). */
export interface ParsedFeedList extends Omit<FeedList, "entries"> {
  entries: CidrSequence;
}

const MAX_ERRORS_KEPT = 1000;

/** The entry of one line: a Cidr, null for a comment or blank line, or the reason the line is bad. */
export function feedLineEntry(raw: string): Cidr | null | string {
  let line = raw;
  const hash = line.indexOf("#");
  if (hash >= 0) line = line.slice(0, hash);
  line = line.trim();
  if (line.length === 0 || line.startsWith(";")) return null;
  if (line.startsWith("{")) return jsonLineEntry(line);
  // Spamhaus: `CIDR ; SBL…`; other publishers put a comment after whitespace.
  const semicolon = line.indexOf(";");
  if (semicolon >= 0) line = line.slice(0, semicolon).trim();
  const space = line.search(/\s/);
  if (space >= 0) {
    // A range (`start - end`, DShield's `start<TAB>end<TAB>bits`) is not guessed at: only a comment may follow.
    const rest = line.slice(space).trim();
    if (rest.startsWith("-") || typeof tryParseIp(rest.split(/\s/)[0]) !== "string") return "not an address or CIDR: a range (two addresses) is not read; give CIDRs";
    line = line.slice(0, space);
  }
  const cidr = tryParseCidr(line);
  if (typeof cidr === "string") return `not an address or CIDR: ${cidr}`;
  // ::ffff:0:0/96 (the IPv4-mapped space, in IPv6 bogon lists) reads as 0.0.0.0/0: no line lists everything.
  if (cidr.prefixLength === 0) return `a network of the whole address space is not a listing (${line})`;
  return cidr;
}

function jsonLineEntry(line: string): Cidr | null | string {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return "not an address or CIDR: a line starting with { is not valid JSON";
  }
  if (typeof value !== "object" || value === null) return "not an address or CIDR: a JSON line must be an object";
  const record = value as Record<string, unknown>;
  if (record.type === "metadata") return null;
  if (typeof record.cidr !== "string") return "not an address or CIDR: a JSON line needs a \"cidr\" string";
  const cidr = tryParseCidr(record.cidr);
  return typeof cidr === "string" ? `not an address or CIDR: ${cidr}` : cidr;
}

/**
 * Reads a whole list. `onProgress` is called every `progressEvery` lines with the lines read so far, for a
 * progress bar on a terminal.
 */
export function parseFeedList(text: string, onProgress?: (linesRead: number) => void, progressEvery = 100_000): FeedList {
  return allAtOnce(parseFeedListInSteps(text, new Pace(Infinity), onProgress, progressEvery));
}

/** Lines a step of a list's parse reads: a few milliseconds, so a 1 M-line list yields some hundred times. */
export const PARSE_STEP_LINES = 8192;

/** parseFeedList a step at a time: yields after every `pace` step of lines (a server's scheduled refresh). */
export function* parseFeedListInSteps(text: string, pace: Pace, onProgress?: (linesRead: number) => void, progressEvery = 100_000): Generator<void, FeedList> {
  const entries: Cidr[] = [];
  const seen = new Set<string>();
  const errors: FeedListError[] = [];
  let lineNumber = 0;
  let badLines = 0;
  let start = 0;
  const n = text.length;
  // Lines are cut by hand: split("\n") on a 1 M-line list holds every line as a string at once.
  while (start < n) {
    let end = text.indexOf("\n", start);
    if (end < 0) end = n;
    const raw = text.charCodeAt(end - 1) === 13 ? text.slice(start, end - 1) : text.slice(start, end);
    lineNumber++;
    const entry = feedLineEntry(raw);
    if (typeof entry === "string") {
      badLines++;
      if (errors.length < MAX_ERRORS_KEPT) errors.push({ line: lineNumber, input: raw.slice(0, 200), error: entry });
    } else if (entry !== null && !seen.has(entry.text)) {
      seen.add(entry.text);
      entries.push(entry);
    }
    if (onProgress && lineNumber % progressEvery === 0) onProgress(lineNumber);
    start = end + 1;
    if (pace.spend()) yield;
  }
  return { entries, errors, badLines, lines: lineNumber };
}
