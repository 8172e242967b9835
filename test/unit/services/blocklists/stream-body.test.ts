// A streamed list renders each chunk after the first in a turn of its own (issue 29): read as fast as it comes, a
// body of many chunks still lets other work run between two, and arrives whole and in order.

import { expect, test } from "bun:test";
import type { ChunkWriter } from "../../../../src/domain/blocklist/chunk-writer";
import { streamBody } from "../../../../src/services/blocklists/blocklist";
import { turnsTaken } from "../../../support/event-loop-watch";

/** A renderer of `lines` numbered lines, as many as fit in each chunk it is given. */
function linesRenderer(lines: number) {
  let at = 0;
  return {
    fills: 0,
    fill(w: ChunkWriter) {
      this.fills++;
      while (!w.full && at < lines) {
        w.uint(at++);
        w.byte(10);
      }
      return at === lines;
    },
  };
}

test("each chunk after the first is rendered after a turn of the event loop; the body is whole", async () => {
  const renderer = linesRenderer(20_000);
  const body = streamBody(renderer, 1024);
  expect(body).toBeInstanceOf(ReadableStream);
  const { value: text, turns } = await turnsTaken(() => new Response(body).text());
  expect(renderer.fills).toBeGreaterThan(50);
  expect(turns).toBeGreaterThanOrEqual(renderer.fills - 2);
  const lines = text.split("\n");
  expect(lines.length).toBe(20_001);
  expect(lines[19_999]).toBe("19999");
});

test("a body that fits in one chunk is returned whole, without a stream", () => {
  const body = streamBody(linesRenderer(10), 1024);
  expect(body).toBeInstanceOf(Uint8Array);
  expect(new TextDecoder().decode(body as Uint8Array)).toBe("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n");
});
