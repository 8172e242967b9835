// The executable's log as journald and log shippers read it: --log-format json gives one JSON object per event
// (the credentials block one event, without the secrets, the access log too); text on journald's stream carries
// each line's level as a `<N>` prefix and no secret; a bad format is refused before anything starts.

import { afterAll, expect, test } from "bun:test";
import { closeSync, fstatSync, openSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { cleanEnv, createSandbox, parseFirstStartCredentials, requireBinary, runCli, track } from "./support/binary";
import { startServer } from "./support/server";

const sandboxes = [createSandbox(), createSandbox(), createSandbox()];
afterAll(() => {
  for (const sandbox of sandboxes) sandbox.cleanup();
});

test("--log-format json: every line is one event with time, level, msg and the command", async () => {
  const sandbox = sandboxes[0];
  const server = await startServer(sandbox, { args: ["--log-format", "json", "--access-log"] });
  try {
    expect((await server.request("GET", "/healthz")).status).toBe(200);
    await server.waitForOutput(/GET \/healthz 200/);
  } finally {
    expect(await server.stop()).toBe(0);
  }
  const events = server.output().split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
  for (const event of events) {
    expect(Object.keys(event).slice(0, 4)).toEqual(["time", "level", "msg", "command"]);
    expect(event.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(["error", "warning", "info", "debug"]).toContain(event.level);
    expect(event.command).toBe("serve");
  }
  expect(events.find((e) => e.msg.startsWith("abuse-intel listening on http://127.0.0.1:"))?.level).toBe("info");
  expect(events.find((e) => / GET \/healthz 200 /.test(e.msg))?.level).toBe("info");

  // The first start is one event naming the file; the password and key stay out of a log shipped elsewhere.
  const firstStart = events.filter((e) => e.msg.includes("first start"));
  expect(firstStart).toHaveLength(1);
  const file = join(sandbox.dataDir, "initial-credentials.txt");
  expect(firstStart[0].msg).toContain(`its password and API key are in ${file}`);
  const credentials = parseFirstStartCredentials(readFileSync(file, "utf8"))!;
  expect(server.output()).not.toContain(credentials.password);
  expect(server.output()).not.toContain(credentials.apiKey!);
}, 60_000);

test("text on journald's stream: each line prefixed with its syslog level, no secret printed", async () => {
  const sandbox = sandboxes[1];
  const logPath = join(sandbox.dir, "journal");
  const fd = openSync(logPath, "w");
  const stat = fstatSync(fd);
  const proc = Bun.spawn([requireBinary(), "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", sandbox.dataDir], {
    cwd: sandbox.dir,
    env: cleanEnv({ JOURNAL_STREAM: `${stat.dev}:${stat.ino}` }),
    stdin: "ignore",
    stdout: fd,
    stderr: fd,
  });
  track(proc);
  closeSync(fd);
  try {
    const deadline = Date.now() + 30_000;
    let listening: RegExpMatchArray | null = null;
    while (listening === null && Date.now() < deadline && proc.exitCode === null) {
      listening = readFileSync(logPath, "utf8").match(/^<6>abuse-intel listening on (http:\/\/127\.0\.0\.1:\d+) /m);
      if (listening === null) await Bun.sleep(50);
    }
    expect(listening).not.toBeNull();
    expect((await fetch(`${listening![1]}/healthz`)).status).toBe(200);
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
  }
  const text = readFileSync(logPath, "utf8");
  for (const line of text.split("\n").filter((l) => l !== "")) expect(line).toMatch(/^<[3467]>/);
  expect(text).toMatch(/^<6>abuse-intel: first start: created the administrator account admin@localhost; its password/m);
  const credentials = parseFirstStartCredentials(readFileSync(join(sandbox.dataDir, "initial-credentials.txt"), "utf8"))!;
  expect(text).not.toContain(credentials.password);
}, 60_000);

test("a log format that is not text or json is refused before the command runs", async () => {
  const result = await runCli(sandboxes[2], ["serve", "--log-format", "xml", "--data-dir", sandboxes[2].dataDir]);
  expect(result.code).toBe(2);
  expect(result.stderr).toBe('abuse-intel: --log-format must be text or json, got "xml"\n');
  const fromEnv = await runCli(sandboxes[2], ["doctor"], { env: { ABUSE_INTEL_LOG_FORMAT: "syslog" } });
  expect(fromEnv.code).toBe(2);
  expect(fromEnv.stderr).toContain("ABUSE_INTEL_LOG_FORMAT must be text or json");
});
