// What authentication and rate limiting cost per request (issue 2), in-process through app.handle so the
// figure is ours and not the network's: an authenticated route with an API key (X-API-Key), with a seen
// JWT, and the ceiling: the same app's unauthenticated /healthz. Also the bare credential lookup.
// Run: npx bun test/bench/auth.bench.ts [--seconds S]

import { createHarness } from "../support/harness";
import { addUser } from "../support/accounts";

const secondsArg = process.argv.indexOf("--seconds");
const SECONDS = secondsArg > 0 ? Number(process.argv[secondsArg + 1]) : 1.5;
const CONCURRENCY = 64;

const h = await createHarness();
const user = await addUser(h, { tier: "enterprise" }); // unlimited: the bench never hits 429
const limited = await addUser(h, { dailyLimit: 1_000_000_000 }); // counted, with headers
const { app } = h;

async function measure(name: string, makeRequest: () => Request): Promise<number> {
  // Warm up (JIT, the JWT cache), then run CONCURRENCY request loops for SECONDS.
  for (let i = 0; i < 2_000; i++) await app.handle(makeRequest());
  let done = 0;
  const deadline = performance.now() + SECONDS * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const res = await app.handle(makeRequest());
        if (res.status !== 200) throw new Error(`${name}: status ${res.status}`);
        done++;
      }
    }),
  );
  const perSecond = done / ((performance.now() - start) / 1000);
  return perSecond;
}

const url = "http://localhost";
const ceiling = await measure("healthz", () => new Request(`${url}/healthz`));
const rows: [string, number][] = [
  ["whoami, X-API-Key, unlimited", await measure("key", () => new Request(`${url}/v1/auth/whoami`, { headers: user.apiKey }))],
  ["whoami, X-API-Key, counted", await measure("key counted", () => new Request(`${url}/v1/auth/whoami`, { headers: limited.apiKey }))],
  ["whoami, Bearer JWT (seen before)", await measure("jwt", () => new Request(`${url}/v1/auth/whoami`, { headers: user.jwt }))],
];

console.log(`ceiling: GET /healthz (no auth) ${Math.round(ceiling).toLocaleString("en")} req/s (in-process, concurrency ${CONCURRENCY})`);
for (const [name, perSecond] of rows) {
  console.log(`${name.padEnd(34)} ${Math.round(perSecond).toLocaleString("en").padStart(10)} req/s  ratio ${(perSecond / ceiling).toFixed(2)}`);
}

// The credential lookup alone: hash + map lookup, no HTTP.
const credentials = h.services.credentials;
const N = 1_000_000;
let t = performance.now();
for (let i = 0; i < N; i++) credentials.byApiKey(user.key);
const lookupNs = ((performance.now() - t) * 1e6) / N;
t = performance.now();
for (let i = 0; i < N; i++) h.services.rateLimiter.take(limited.user.id, 1_000_000_000_000);
const takeNs = ((performance.now() - t) * 1e6) / N;
console.log(`credentials.byApiKey ${lookupNs.toFixed(0)} ns/lookup; rateLimiter.take ${takeNs.toFixed(0)} ns/count`);

await h.close();
