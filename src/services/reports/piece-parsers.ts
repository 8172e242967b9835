// Where the import file's pieces are parsed: on a worker thread (parse-worker.ts) for a large file, so parsing
// overlaps with SQLite's inserts, else on the importing thread. Both run PieceParser; the answers are the same.
// A worker that is not ready in time (an executable built without its entry point) is not used; one that fails
// once it has pieces fails the import (it rolls back).

import { startOrderedWorker } from "./ordered-worker";
import { importWorkerSpecifier } from "./worker-module";
import { AppError, type ErrorCode } from "../../domain/errors";
import type { ParseOptions } from "./import-csv";
import { PieceParser, type RowBatch } from "./row-batch";

export type ParseRequest = { kind: "start"; options: ParseOptions } | { kind: "piece"; text: string; final: boolean };
/** A piece's answer (before them the worker posts "ready"). */
export type ParseReply = { kind: "rows"; batch: RowBatch } | { kind: "error"; code: ErrorCode | null; message: string };

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
  const worker = startOrderedWorker<ParseRequest, ParseReply>(importWorkerSpecifier("parse-worker.ts"), "the import's parsing worker failed");
  if (!(await worker.whenReady(readyWithinMs))) {
    worker.close();
    return null;
  }
  worker.send({ kind: "start", options: { nowMs: options.nowMs, params: options.params } } satisfies ParseRequest);
  return {
    // The parser's state is on the worker: a piece cannot move to this thread, so a failed worker fails the import.
    async parse(text, final) {
      const reply = await worker.request({ kind: "piece", text, final } satisfies ParseRequest);
      if (reply.kind === "rows") return reply.batch;
      throw reply.code === null ? new Error(reply.message) : new AppError(reply.code, reply.message);
    },
    close: () => worker.close(),
  };
}
