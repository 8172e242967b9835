// Many connections against the built executable (issue 18): 2,000 idle keep-alive connections and a client that
// sends its body one byte a second must not slow other clients' lookups. Compared within the run: the median
// lookup time with them open against the median before, with a generous bound (timings on a shared machine vary;
// the benchmark, not this test, measures speed).

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Socket } from "bun";
import { createSandbox, parseFirstStartCredentials, type Sandbox } from "./support/binary";
import { bodyOf, type RunningServer, startServer } from "./support/server";

let sandbox: Sandbox;
let server: RunningServer;
let key: string;

beforeAll(async () => {
  sandbox = createSandbox();
  server = await startServer(sandbox);
  const creds = parseFirstStartCredentials(server.output())!;
  const login = await bodyOf(await server.request("POST", "/v1/auth/login", { json: { email: creds.email, password: creds.password } }));
  const made = await server.request("POST", "/v1/keys", { headers: { authorization: `Bearer ${login.data.accessToken}` }, json: { name: "load" } });
  key = (await bodyOf(made)).data.key;
}, 30_000);
afterAll(async () => {
  await server?.stop();
  sandbox?.cleanup();
});

async function medianLookupMs(n: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    const res = await fetch(`${server.url}/v1/ip/198.51.100.${i % 250}/reputation`, { headers: { "x-api-key": key } });
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[n >> 1];
}

test("2,000 idle keep-alive connections and a one-byte-a-second body do not slow other clients' lookups", async () => {
  const before = await medianLookupMs(200);
  const { hostname, port } = new URL(server.url);
  const sockets: Socket<undefined>[] = [];
  const opened = await Promise.all(
    Array.from({ length: 2000 }, (_, i) =>
      Bun.connect({
        hostname,
        port: Number(port),
        socket: { data() {}, error() {} },
      }).then((socket) => {
        // Half send a whole request and keep the connection; half only part of the headers, then nothing.
        socket.write(i % 2 === 0 ? `GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n` : `GET /v1/ip/8.8.8.8 HTTP/1.1\r\nHost: x\r\n`);
        sockets.push(socket);
        return true;
      }),
    ),
  );
  expect(opened.length).toBe(2000);
  // The slow client: a report body of 200 bytes announced, sent one byte a second.
  const slow = await Bun.connect({ hostname, port: Number(port), socket: { data() {}, error() {} } });
  slow.write(`POST /v1/ip/bulk HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{`);
  const drip = setInterval(() => slow.write(" "), 1000);
  try {
    await Bun.sleep(1500);
    const during = await medianLookupMs(200);
    console.log(`median lookup: ${before.toFixed(2)} ms alone, ${during.toFixed(2)} ms with 2,000 idle connections and a slow body`);
    expect(during).toBeLessThan(Math.max(before * 5, before + 10));
    // The server still answers everyone, and is still the same process.
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(server.proc.exitCode).toBeNull();
  } finally {
    clearInterval(drip);
    slow.end();
    for (const s of sockets) s.end();
  }
}, 60_000);
