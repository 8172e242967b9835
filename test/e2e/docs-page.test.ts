// The docs page from the built executable: its style and script are asset files (src/http/assets/) that the
// bundler carries inside the binary as text; the page must hold both, and its CSP must allow exactly them.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createSandbox, type Sandbox } from "./support/binary";
import { type RunningServer, startServer } from "./support/server";

let sandbox: Sandbox;
let server: RunningServer;
beforeAll(async () => {
  sandbox = createSandbox();
  server = await startServer(sandbox);
}, 30_000);
afterAll(async () => {
  await server?.stop();
  sandbox?.cleanup();
});

const asset = (name: string) => readFileSync(join(import.meta.dir, "../../src/http/assets", name), "utf8");
const sha256 = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

test("GET /docs carries the asset files' CSS and script inline, each allowed by its hash", async () => {
  const res = await server.request("GET", "/docs");
  expect(res.status).toBe(200);
  const html = await res.text();
  const css = asset("docs.css");
  const js = asset("docs.js");
  expect(html).toContain(`<style>${css}</style>`);
  expect(html).toContain(`<script>${js}</script>`);
  const csp = res.headers.get("content-security-policy") ?? "";
  expect(csp).toContain(sha256(css));
  expect(csp).toContain(sha256(js));
});
