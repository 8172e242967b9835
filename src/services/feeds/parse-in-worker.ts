// A feed's list parsed on a worker thread (feed-parse-worker.ts) for a server: a file read there, downloaded bytes
// or posted text decoded there, and the entries handed back packed (domain/packed-cidrs.ts). Parsed in steps on
// the event loop's thread, a 1 M-line list still held it 100-220 ms at a time (the collector walking the parsed
// list's millions of objects beside the million listings), and a file's readFileSync 60 ms (issue 29).

import type { FeedListError, ParsedFeedList } from "../../domain/feed-list";
import { PackedCidrs } from "../../domain/packed-cidrs";
import { withReadyWorker } from "../reports/ordered-worker";
import { workerSpecifier } from "../worker-module";

export type FeedParseRequest = { path: string } | { bytes: Uint8Array } | { text: string };
export type FeedParseReply =
  | { kind: "parsed"; words: Uint32Array; errors: FeedListError[]; badLines: number; lines: number }
  | { kind: "error"; message: string };


/** Parses the list in the file at `path`, in `bytes` (UTF-8, sent: the caller's buffer is detached) or in `text`. */
export async function parseFeedListInWorker(source: FeedParseRequest): Promise<ParsedFeedList> {
  const reply = await withReadyWorker<FeedParseRequest, FeedParseReply, FeedParseReply>(workerSpecifier("feeds/feed-parse-worker.ts"), "the feed list's parsing worker", (worker) =>
    worker.request(source, "bytes" in source ? [source.bytes.buffer as ArrayBuffer] : []),
  );
  if (reply.kind === "error") throw new Error(reply.message);
  return { entries: PackedCidrs.fromWords(reply.words), errors: reply.errors, badLines: reply.badLines, lines: reply.lines };
}
