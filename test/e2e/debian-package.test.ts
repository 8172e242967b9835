// The Debian package (npm run package) on this machine, as root, the way an operator uses it: lintian finds no
// error, dpkg -i installs it, systemd-analyze verify accepts the unit, the unit's ExecStart runs as the service
// user (support/systemd-unit.ts: no systemd runs here) and answers; an upgrade keeps data, credentials and an edited
// conffile; remove keeps the data; purge deletes it. Whatever happens, the test purges what it installed.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { OPTIONS } from "../../src/config";
import { parseFirstStartCredentials } from "./support/binary";
import { exists, startUnit, type UnitProcess } from "./support/systemd-unit";

const root = join(import.meta.dir, "../..");
const UNIT = "/lib/systemd/system/abuse-intel.service";
const CONFFILE = "/etc/default/abuse-intel";
const DATA = "/var/lib/abuse-intel";
const CREDENTIALS = join(DATA, "initial-credentials.txt");

const sh = (command: string, args: string[], input?: string) => spawnSync(command, args, { encoding: "utf8", input, maxBuffer: 64 * 1024 * 1024 });
const arch = sh("dpkg", ["--print-architecture"]).stdout?.trim() ?? "";
const DEB = join(root, "build/out", `abuse-intel_${pkg.version}-1_${arch}.deb`);

/** Why this machine cannot run the test, or null. On CI (root, the tools installed by .ci/run) it always runs. */
function missing(): string | null {
  if (process.getuid?.() !== 0) return "it needs root (dpkg -i)";
  for (const tool of ["dpkg-deb", "lintian", "systemd-analyze", "setpriv", "python3", "adduser"]) {
    if (sh("sh", ["-c", `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  return null;
}
const reason = missing();
const run = reason === null || process.env.CI ? describe : describe.skip;

/** dpkg, retried while another dpkg holds its lock (a shared machine); the result of the last try. */
async function dpkg(args: string[]) {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const result = sh("dpkg", args);
    if (result.status === 0 || !/lock/i.test(result.stderr) || Date.now() > deadline) return result;
    await Bun.sleep(1000);
  }
}

async function expectDpkg(args: string[]) {
  const result = await dpkg(args);
  if (result.status !== 0) throw new Error(`dpkg ${args.join(" ")} failed (exit ${result.status}):\n${result.stdout}${result.stderr}`);
  return result.stdout + result.stderr;
}

const installedVersion = () => sh("dpkg-query", ["-W", "-f=${Version} ${db:Status-Abbrev}", "abuse-intel"]).stdout.trim();
const userExists = () => sh("getent", ["passwd", "abuse-intel"]).status === 0;

/** A free TCP port on 127.0.0.1 below 1024 (the unit's ambient CAP_NET_BIND_SERVICE must let the user bind it). */
function freeLowPort(): number {
  for (let port = 1023; port > 600; port--) {
    try {
      const listener = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
      listener.stop(true);
      return port;
    } catch {
      // in use
    }
  }
  throw new Error("no free port below 1024 on 127.0.0.1");
}

/** The conffile with the listen address set as an operator would (this machine's other services keep theirs). */
function setListenAddress(port: number): void {
  const kept = readFileSync(CONFFILE, "utf8").split("\n").filter((l) => !/^ABUSE_INTEL_(HOST|PORT)=/.test(l));
  writeFileSync(CONFFILE, [...kept, "ABUSE_INTEL_HOST=127.0.0.1", `ABUSE_INTEL_PORT=${port}`, ""].join("\n").replace(/\n\n+$/, "\n"));
}

let service: UnitProcess | null = null;
let url = "";
const workDir = mkdtempSync(join(tmpdir(), "abuse-intel-deb-test-"));
const userBefore = userExists();
let installedByUs = false;
const REPORTED = "198.51.100.77";

/** Starts the installed unit's ExecStart, waits for READY=1 and /readyz 200, runs ExecStartPost. */
async function startService(): Promise<UnitProcess> {
  const port = freeLowPort();
  setListenAddress(port);
  service = await startUnit(UNIT);
  await service.waitForNotification(/READY=1/, 180_000);
  url = `http://127.0.0.1:${port}`;
  const ready = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(15_000) });
  expect(ready.status).toBe(200);
  service.runExecStartPost();
  return service;
}

async function login(email: string, password: string): Promise<Response> {
  return fetch(`${url}/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
    signal: AbortSignal.timeout(15_000),
  });
}

async function lookup(apiKey: string) {
  const res = await fetch(`${url}/v1/ip/${REPORTED}`, { headers: { "x-api-key": apiKey }, signal: AbortSignal.timeout(15_000) });
  expect(res.status).toBe(200);
  return (await res.json()) as { reports: number };
}

run("the Debian package", () => {
  beforeAll(() => {
    if (reason !== null) throw new Error(`this machine cannot run the package test: ${reason}`);
    if (!exists(DEB)) throw new Error(`${DEB} is missing: run \`npm run build && npm run package\` first`);
    const before = installedVersion();
    if (before !== "" && !before.endsWith(" un")) {
      throw new Error(`abuse-intel is already installed on this machine (${before}): the test would purge it; remove it first`);
    }
  });

  afterAll(async () => {
    await service?.stop();
    if (installedByUs || exists(UNIT)) await dpkg(["--purge", "abuse-intel"]);
    if (!userBefore && userExists()) sh("deluser", ["--system", "--quiet", "abuse-intel"]);
    if (!userBefore) sh("sh", ["-c", "getent group abuse-intel >/dev/null && delgroup --system --quiet abuse-intel || true"]);
    rmSync(workDir, { recursive: true, force: true });
  }, 180_000);

  test("lintian reports no error (warnings are fixed or overridden with a reason)", () => {
    const result = sh("lintian", ["--fail-on", "error", DEB]);
    const tags = `${result.stdout}${result.stderr}`.split("\n").filter((l) => /^[EW]: /.test(l));
    expect(tags.filter((l) => l.startsWith("E: "))).toEqual([]);
    expect(result.status).toBe(0);
  }, 1_200_000);

  test("dpkg -i installs the executable, the unit, the conffile, the user and a private data directory", async () => {
    await expectDpkg(["-i", DEB]);
    installedByUs = true;
    expect(installedVersion()).toBe(`${pkg.version}-1 ii`);
    expect(sh("/usr/bin/abuse-intel", ["--version"]).stdout.trim()).toBe(pkg.version);

    const user = sh("getent", ["passwd", "abuse-intel"]).stdout.trim().split(":");
    expect(user[5]).toBe(DATA);
    expect(user[6]).toBe("/usr/sbin/nologin");
    expect(Number(user[2])).toBeLessThan(1000);
    const data = statSync(DATA);
    expect(data.mode & 0o777).toBe(0o750);
    expect(data.uid).toBe(Number(user[2]));

    const conffile = readFileSync(CONFFILE, "utf8");
    for (const option of [...OPTIONS.map((o) => o.env), "ABUSE_INTEL_LOG_FORMAT"]) expect(conffile).toMatch(new RegExp(`^#${option}=`, "m"));
    expect(conffile.split("\n").filter((l) => /^[A-Z]/.test(l))).toEqual([]);
    expect(sh("dpkg-query", ["-W", "-f=${Conffiles}", "abuse-intel"]).stdout).toContain(CONFFILE);

    const copyright = readFileSync("/usr/share/doc/abuse-intel/copyright", "utf8");
    expect(copyright).toStartWith("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/");
    expect(copyright).toContain("License: CC0-1.0");
    expect(copyright).toContain("License: CC-BY-4.0");
    expect(copyright).toContain("elysia ");
    expect(exists("/usr/share/doc/abuse-intel/changelog.Debian.gz")).toBe(true);
    const man = sh("sh", ["-c", "MANWIDTH=100 man -l /usr/share/man/man1/abuse-intel.1.gz 2>&1"]).stdout;
    expect(man).toContain("abuse-intel serve");
    for (const command of ["serve", "backup", "restore", "doctor"]) expect(man).toContain(`Usage: abuse-intel ${command}`);

    // Every unit in packaging/systemd is installed; the main one is enabled, as deb-systemd-helper does it.
    for (const unit of readdirSync(join(root, "packaging/systemd")).filter((f) => /\.(service|timer)$/.test(f))) {
      expect(exists(`/lib/systemd/system/${unit}`)).toBe(true);
    }
    expect(exists("/etc/systemd/system/multi-user.target.wants/abuse-intel.service")).toBe(true);
  }, 600_000);

  test("systemd-analyze verify accepts every installed unit", () => {
    const units = readdirSync("/lib/systemd/system").filter((f) => f.startsWith("abuse-intel") && /\.(service|timer)$/.test(f));
    expect(units).toContain("abuse-intel.service");
    const result = sh("systemd-analyze", ["verify", ...units.map((u) => `/lib/systemd/system/${u}`)]);
    expect(`${result.stdout}${result.stderr}`).toBe("");
    expect(result.status).toBe(0);
  }, 120_000);

  let credentials: { email: string; password: string; apiKey: string | null } | null = null;
  let credentialsText = "";

  test("ExecStart as the service user: READY=1, /readyz 200 on a port below 1024, root-only credentials, a lookup", async () => {
    const running = await startService();
    const pid = running.proc.pid;
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const uid = sh("id", ["-u", "abuse-intel"]).stdout.trim();
    expect(status).toMatch(new RegExp(`^Uid:\\s+${uid}\\s+${uid}\\s+${uid}\\s+${uid}$`, "m"));
    expect(status).toMatch(/^CapEff:\s+0000000000000400$/m); // CAP_NET_BIND_SERVICE alone
    expect(status).toMatch(/^NoNewPrivs:\s+1$/m);
    // It got ready in the sandbox the unit asks for: everything read-only but its data, its own /tmp.
    const mounts = readFileSync(`/proc/${pid}/mountinfo`, "utf8").split("\n").filter(Boolean).map((l) => l.split(" "));
    const mountAt = (path: string) => mounts.filter((m) => m[4] === path).at(-1);
    expect(mountAt("/")?.[5]).toMatch(/^ro\b/);
    expect(mountAt(DATA)?.[5]).toMatch(/^rw\b/);
    const tmp = mountAt("/tmp");
    expect(tmp?.[tmp.indexOf("-") + 1]).toBe("tmpfs");

    // The journal gets each line with its level, and never the password or the key.
    const output = running.output();
    expect(output).toMatch(/^<6>abuse-intel listening on http:\/\/127\.0\.0\.1:\d+ \(data in \/var\/lib\/abuse-intel\)$/m);
    expect(output).toContain(`<6>abuse-intel: first start: created the administrator account admin@localhost; its password and API key are in ${CREDENTIALS}`);

    const file = statSync(CREDENTIALS);
    expect([file.uid, file.gid, file.mode & 0o777]).toEqual([0, 0, 0o600]);
    expect(sh("runuser", ["-u", "abuse-intel", "--", "cat", CREDENTIALS]).status).not.toBe(0);
    credentialsText = readFileSync(CREDENTIALS, "utf8");
    credentials = parseFirstStartCredentials(credentialsText);
    expect(credentials?.apiKey).toMatch(/^aik_/);
    expect(output).not.toContain(credentials!.password);
    expect(output).not.toContain(credentials!.apiKey!);

    const signedIn = await login(credentials!.email, credentials!.password);
    expect(signedIn.status).toBe(200);
    const token = ((await signedIn.json()) as { data: { accessToken: string } }).data.accessToken;
    const report = await fetch(`${url}/v1/ip/report`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify({ ipAddress: REPORTED, category: "SSH", description: "package test", severity: 4 }),
      signal: AbortSignal.timeout(15_000),
    });
    expect(report.status).toBe(201);
    expect((await lookup(credentials!.apiKey!)).reports).toBe(1);

    // The README's backup, as the service user while the service runs.
    const backup = sh("runuser", ["-u", "abuse-intel", "--", "abuse-intel", "backup", "--data-dir", DATA, "--out", join(DATA, "backup.db")]);
    expect(backup.stderr).toBe("");
    expect(backup.status).toBe(0);
    expect(statSync(join(DATA, "backup.db")).size).toBeGreaterThan(0);

    expect(await running.stop()).toBe(0);
    service = null;
  }, 420_000);

  test("an upgrade to a higher version keeps the data, the credentials and the edited conffile", async () => {
    expect(credentials).not.toBeNull();
    const build = sh(process.execPath, [join(root, "build/package.ts"), "--version", bumped(pkg.version), "--out", workDir]);
    expect(build.stderr).toBe("");
    expect(build.status).toBe(0);
    const next = join(workDir, `abuse-intel_${bumped(pkg.version)}-1_${arch}.deb`);

    appendFileSync(CONFFILE, "# kept across the upgrade\n");
    const edited = readFileSync(CONFFILE, "utf8");
    await expectDpkg(["-i", next]);
    expect(installedVersion()).toBe(`${bumped(pkg.version)}-1 ii`);
    expect(readFileSync(CONFFILE, "utf8")).toBe(edited);
    expect(readFileSync(CREDENTIALS, "utf8")).toBe(credentialsText);

    await startService();
    expect(service!.output()).not.toContain("first start");
    expect((await login(credentials!.email, credentials!.password)).status).toBe(200);
    expect((await lookup(credentials!.apiKey!)).reports).toBe(1);
    expect(await service!.stop()).toBe(0);
    service = null;
  }, 1_200_000);

  test("remove keeps the data and the conffile; reinstalling finds them; purge deletes them and keeps the user", async () => {
    await expectDpkg(["-r", "abuse-intel"]);
    expect(installedVersion()).toEndWith(" rc");
    expect(exists("/usr/bin/abuse-intel")).toBe(false);
    expect(exists(UNIT)).toBe(false);
    expect(exists(join(DATA, "abuse-intel.db"))).toBe(true);
    expect(exists(CREDENTIALS)).toBe(true);
    expect(exists(CONFFILE)).toBe(true);

    await expectDpkg(["-i", join(workDir, `abuse-intel_${bumped(pkg.version)}-1_${arch}.deb`)]);
    const users = sh("runuser", ["-u", "abuse-intel", "--", "abuse-intel", "user", "list", "--data-dir", DATA]);
    expect(users.status).toBe(0);
    expect(users.stdout).toContain(credentials!.email);

    await expectDpkg(["--purge", "abuse-intel"]);
    installedByUs = false;
    expect(installedVersion()).toMatch(/^$|^\S+ un$/);
    expect(exists(DATA)).toBe(false);
    expect(exists(CONFFILE)).toBe(false);
    expect(exists("/etc/systemd/system/multi-user.target.wants/abuse-intel.service")).toBe(false);
    expect(userExists()).toBe(true);
  }, 900_000);
});

/** The version with its last number one higher: 0.1.0 → 0.1.1. */
function bumped(version: string): string {
  const parts = version.split(".");
  parts[parts.length - 1] = String(Number(parts.at(-1)) + 1);
  return parts.join(".");
}
