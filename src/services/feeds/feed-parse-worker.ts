// The worker thread a server parses a feed's list on (parse-in-worker.ts): the list's text decoded or read here,
// its lines parsed here, and its entries sent back packed in one buffer, so neither the parse nor a million small
// objects of the parsed list reach the event loop's thread and its collector (issue 29).

import { readFileSync } from "node:fs";
import { parseFeedList } from "../../domain/feed-list";
import { PackedCidrs } from "../../domain/packed-cidrs";
import { yieldCpuToServers } from "../background-priority";
import type { FeedParseReply, FeedParseRequest } from "./parse-in-worker";

declare const self: Worker;

// Threads this one starts (its collector's) take its niceness.
yieldCpuToServers();

self.onmessage = (event: MessageEvent<FeedParseRequest | "close">) => {
  if (event.data === "close") process.exit(0);
  const request = event.data;
  let reply: FeedParseReply;
  try {
    const text = "path" in request ? readFileSync(request.path, "utf8") : "bytes" in request ? new TextDecoder().decode(request.bytes) : request.text;
    const list = parseFeedList(text);
    const packed = PackedCidrs.pack(list.entries);
    reply = { kind: "parsed", words: packed.words, errors: list.errors, badLines: list.badLines, lines: list.lines };
    self.postMessage(reply, [packed.words.buffer as ArrayBuffer]);
    return;
  } catch (error) {
    reply = { kind: "error", message: error instanceof Error ? error.message : String(error) };
  }
  self.postMessage(reply);
};
self.postMessage("ready");
