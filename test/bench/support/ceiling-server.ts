// The ceiling of the lookup benchmark: a raw Bun.serve that answers every request with one fixed JSON body
// (a reputation record of the same size as the real one). Prints its port on stdout, then serves until killed.
// Run: bun test/bench/support/ceiling-server.ts BODY_FILE

export {};

const body = await Bun.file(process.argv[2]!).text();
const headers = { "content-type": "application/json; charset=utf-8" };
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response(body, { headers }) });
console.log(`ceiling listening on http://127.0.0.1:${server.port}`);
