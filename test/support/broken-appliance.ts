// A stand-in for an appliance (or a proxy in front of one) that answers GET .../v1/ip/blocklist badly, for the
// firewall sync's failure tests; run as its own process inside the test's network namespace:
//   bun test/support/broken-appliance.ts PORT
// The first path segment picks the answer: /whole (the real nft or ipset body of BROKEN_APPLIANCE_LIST), /cut
// (half of it, then a clean end), /reset (half, then the connection dropped), /html (a 200 HTML page), /stall
// (half, then nothing), /error (a 502). Bodies come from the product's own renderer.

import { type BlocklistEntry, arrayCursor, renderToString } from "../../src/domain/blocklist/formats";
import { type BlocklistFormat, blocklistFilters } from "../../src/domain/blocklist/query";
import { type Ipv6, parseCidr } from "../../src/domain/ip";

/** 20,000 addresses in 10.0.0.0/15 and a few more: half the ipset body is more than the sync buffers before it starts `ipset restore`. */
export const BROKEN_APPLIANCE_LIST = [
  ...Array.from({ length: 20_000 }, (_, i) => `10.${i >> 15}.${(i >> 7) & 255}.${(i & 127) * 2}`),
  "192.0.2.1",
  "198.51.100.0/24",
  "203.0.113.9",
  "2001:db8::1",
  "2001:db8:1::/48",
];

function body(format: BlocklistFormat): string {
  const entries: BlocklistEntry[] = BROKEN_APPLIANCE_LIST.map((text) => {
    const c = parseCidr(text);
    return c.network.version === 4 ? { version: 4, v4: (c.network as { value: number }).value, prefixLength: c.prefixLength } : { version: 6, v6: (c.network as Ipv6).words, prefixLength: c.prefixLength };
  });
  return renderToString(format, { generatedAtMs: Date.now(), count: entries.length, filters: blocklistFilters() }, arrayCursor(entries));
}

if (import.meta.main) {
  const port = Number(process.argv[2]);
  Bun.serve({
    hostname: "127.0.0.1",
    port,
    idleTimeout: 0,
    fetch(request) {
      const url = new URL(request.url);
      const mode = url.pathname.split("/")[1];
      const whole = body((url.searchParams.get("format") ?? "nft") as BlocklistFormat);
      const half = whole.slice(0, Math.floor(whole.length / 2));
      const text = { "content-type": "text/plain; charset=utf-8" };
      if (mode === "whole") return new Response(whole, { headers: { ...text, etag: `"whole-${Date.now()}"` } });
      if (mode === "html") return new Response("<!DOCTYPE html>\n<html><body><h1>Welcome to nginx!</h1></body></html>\n", { headers: { "content-type": "text/html" } });
      if (mode === "error") return new Response("<html>502 Bad Gateway</html>", { status: 502 });
      const stream = new ReadableStream<string>({
        async start(controller) {
          controller.enqueue(half);
          if (mode === "cut") return controller.close();
          if (mode === "reset") {
            await Bun.sleep(100);
            return controller.error(new Error("connection dropped"));
          }
          await Bun.sleep(3_600_000); // stall
        },
      });
      return new Response(stream, { headers: mode === "reset" ? { ...text, "content-length": String(whole.length) } : text });
    },
  });
  console.log(`listening on ${port}`);
}
