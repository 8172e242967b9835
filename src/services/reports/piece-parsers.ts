// Where the import file's pieces are parsed: on a worker thread (parse-worker.ts) for a large file, so parsing
// overlaps with SQLite's inserts, else on the importing thread. Both run PieceParser; the answers are the same.
// A worker that is not ready in time (an executable built without its entry point) is not used; one that fails
// once it has pieces fails the import (it rolls back).

import { importWorkerSpecifier } from "./worker-module";
import { AppError, type ErrorCode } from "../../domain/errors";
import type { ParseOptions } from "./import-csv";
import { PieceParser, type RowBatch } from "./row-batch";

export type ParseRequest = { kind: "start"; options: ParseOptions } | { kind: "piece"; text: string; final: boolean } | { kind: "close" };
export type ParseReply = { kind: "ready" } | { kind: "rows"; batch: RowBatch } | { kind: "error"; code: ErrorCode | null; message: string };

export interface PieceParsers {
  parse(text: string, final: boolean): Promise<RowBatch>;
  close(): void;
}

export function inThreadParsers(options: ParseOptions): PieceParsers {
  const parser = new PieceParser(options);
  return {
    parse: (text, final) => {
      try {
        return Promise.resolve(parser.push(text, final));
      } catch (error) {
        return Promise.reject(error);
      }
    },
    close() {},
  };
}


/** A worker that parses, once it said it is ready within `readyWithinMs`; null when it did not. */
export async function startParseWorker(options: ParseOptions, readyWithinMs: number): Promise<PieceParsers | null> {
  let worker: Worker;
  try {
    worker = new Worker(importWorkerSpecifier("parse-worker.ts"));
  } catch {
    return null;
  }
  const queue: { resolve: (batch: RowBatch) => void; reject: (error: Error) => void }[] = [];
  let failed: Error | null = null;
  const ready = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), readyWithinMs);
    worker.onmessage = (event: MessageEvent<ParseReply>) => {
      const reply = event.data;
      if (reply.kind === "ready") {
        clearTimeout(timer);
        resolve(true);
      } else if (reply.kind === "rows") {
        queue.shift()?.resolve(reply.batch);
      } else {
        queue.shift()?.reject(reply.code === null ? new Error(reply.message) : new AppError(reply.code, reply.message));
      }
    };
    worker.onerror = (event) => {
      event.preventDefault();
      clearTimeout(timer);
      failed = new Error("the import's parsing worker failed");
      for (const entry of queue.splice(0)) entry.reject(failed);
      resolve(false);
    };
  });
  if (!ready) {
    worker.terminate();
    return null;
  }
  worker.unref();
  worker.postMessage({ kind: "start", options: { nowMs: options.nowMs, params: options.params } } satisfies ParseRequest);
  return {
    parse(text, final) {
      if (failed) return Promise.reject(failed);
      return new Promise((resolve, reject) => {
        queue.push({ resolve, reject });
        worker.postMessage({ kind: "piece", text, final } satisfies ParseRequest);
      });
    },
    close() {
      worker.postMessage({ kind: "close" } satisfies ParseRequest);
    },
  };
}
