import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseFeedList } from "../../../../src/domain/feed-list";
import type { ParsedFeedList } from "../../../../src/domain/feed-list";
import { parseFeedListInWorker } from "../../../../src/services/feeds/parse-in-worker";

const dir = mkdtempSync(join(tmpdir(), "abuse-intel-feed-parse-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixture = (name: string) => readFileSync(join(import.meta.dir, "../../domain/fixtures/feeds", name), "utf8");

/** A list as parseFeedList gives it, the entries as texts. */
const asParsed = (list: ParsedFeedList) => ({
  entries: Array.from({ length: list.entries.length }, (_, i) => list.entries.at(i)!.text),
  errors: list.errors,
  badLines: list.badLines,
  lines: list.lines,
});

describe("a feed list parsed on a worker thread", () => {
  // Both families, duplicates, bad lines, comments, a CRLF line.
  const text = [fixture("firehol_level1.netset"), fixture("dropv6.txt"), "10.0.0.1\r", "10.0.0.1", "10.1.2.3/24", "not an address", "2001:db8::/32 ; x"].join("\n");
  const atOnce = parseFeedList(text);

  test("from text, from UTF-8 bytes and from a file: what parseFeedList gives", async () => {
    const file = join(dir, "list.txt");
    writeFileSync(file, text);
    const expected = { ...atOnce, entries: atOnce.entries.map((c) => c.text) };
    expect(expected.entries.length).toBeGreaterThan(8);
    expect(expected.badLines).toBe(2);
    expect(asParsed(await parseFeedListInWorker({ text }))).toEqual(expected);
    expect(asParsed(await parseFeedListInWorker({ bytes: new TextEncoder().encode(text) }))).toEqual(expected);
    expect(asParsed(await parseFeedListInWorker({ path: file }))).toEqual(expected);
  }, 60_000);

  test("a file that cannot be read is an error with its reason", async () => {
    await expect(parseFeedListInWorker({ path: join(dir, "missing.txt") })).rejects.toThrow(/ENOENT|no such file/i);
  }, 60_000);

  test("a list of 100,000 lines comes back whole", async () => {
    const lines = Array.from({ length: 100_000 }, (_, i) => `10.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`);
    const list = await parseFeedListInWorker({ text: lines.join("\n") });
    expect(list.entries.length).toBe(100_000);
    expect([list.entries.at(0)!.text, list.entries.at(99_999)!.text]).toEqual(["10.0.0.0/32", "10.1.134.159/32"]);
  }, 60_000);
});
