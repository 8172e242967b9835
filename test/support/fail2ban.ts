// Debian's fail2ban for real, in a directory of a test's own (issue 13): a fail2ban-server in the foreground with
// its own configuration, socket, pid file and log, one jail over a log file the test writes, and as its only
// action a copy of the SHIPPED action.d/abuseipdb.conf with nothing changed but the URL. No firewall action runs,
// so the host's rules are never touched. Stopped by its pid.

import { spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

export const SHIPPED_ACTION = "/etc/fail2ban/action.d/abuseipdb.conf";
const ABUSEIPDB_URL = "https://api.abuseipdb.com/api/v2/report";
export const JAIL = "appliance-test";

export function fail2banInstalled(): boolean {
  return existsSync(SHIPPED_ACTION) && spawnSync("fail2ban-server", ["--version"]).status === 0;
}

export class Fail2ban {
  private constructor(
    readonly dir: string,
    private readonly proc: Subprocess,
  ) {}

  /** Starts a server whose jail reports to `reportUrl` with `apiKey` and `categories` (AbuseIPDB numbers). */
  static async start(options: { reportUrl: string; apiKey: string; categories: string }): Promise<Fail2ban> {
    const dir = mkdtempSync(join(tmpdir(), "abuse-intel-fail2ban-"));
    mkdirSync(join(dir, "filter.d"));
    mkdirSync(join(dir, "action.d"));
    writeFileSync(
      join(dir, "fail2ban.conf"),
      `[Definition]\nloglevel = INFO\nlogtarget = ${dir}/fail2ban.log\nsocket = ${dir}/fail2ban.sock\npidfile = ${dir}/fail2ban.pid\ndbfile = :memory:\n`,
    );
    writeFileSync(join(dir, "filter.d", `${JAIL}.conf`), "[Definition]\nfailregex = ^Failed login from <HOST>$\ndatepattern = {NONE}\n");
    const shipped = readFileSync(SHIPPED_ACTION, "utf8");
    if (!shipped.includes(ABUSEIPDB_URL)) throw new Error(`${SHIPPED_ACTION} no longer holds ${ABUSEIPDB_URL}: see what changed`);
    // The shipped action with only the URL changed: the drop-in an operator writes (README, "Using AbuseIPDB clients").
    writeFileSync(join(dir, "action.d", "abuseipdb.conf"), shipped.replace(ABUSEIPDB_URL, options.reportUrl));
    writeFileSync(
      join(dir, "jail.conf"),
      [
        "[DEFAULT]",
        "backend = polling",
        `[${JAIL}]`,
        "enabled = true",
        `filter = ${JAIL}`,
        `logpath = ${dir}/auth.log`,
        "maxretry = 2",
        "findtime = 60",
        "bantime = 600",
        `action = abuseipdb[abuseipdb_apikey="${options.apiKey}", abuseipdb_category="${options.categories}"]`,
        "",
      ].join("\n"),
    );
    writeFileSync(join(dir, "auth.log"), "");
    const proc = Bun.spawn(["fail2ban-server", "-f", "-x", "-c", dir, "-s", join(dir, "fail2ban.sock"), "-p", join(dir, "fail2ban.pid")], {
      stdout: "ignore",
      stderr: "ignore",
    });
    const f2b = new Fail2ban(dir, proc);
    await f2b.waitForLog(/Jail '.*' started/, 15_000);
    return f2b;
  }

  /** Appends failed-login lines for `ip` to the jail's log. */
  fail(ip: string, times: number): void {
    appendFileSync(join(this.dir, "auth.log"), `Failed login from ${ip}\n`.repeat(times));
  }

  /**
   * fail2ban-client against this server's socket. Asynchronous on purpose: `banip` waits for the ban's actions,
   * whose curl calls the appliance in this same process, which must keep answering meanwhile.
   */
  async client(...args: string[]): Promise<{ status: number | null; stdout: string }> {
    const proc = Bun.spawn(["fail2ban-client", "-c", this.dir, "-s", join(this.dir, "fail2ban.sock"), ...args], { stdout: "pipe", stderr: "ignore" });
    const stdout = await new Response(proc.stdout).text();
    return { status: await proc.exited, stdout };
  }

  log(): string {
    const path = join(this.dir, "fail2ban.log");
    return existsSync(path) ? readFileSync(path, "utf8") : "";
  }

  async waitForLog(pattern: RegExp, timeoutMs: number): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.log().match(pattern);
      if (match) return match;
      if (Date.now() > deadline) throw new Error(`fail2ban's log shows no ${pattern} within ${timeoutMs} ms:\n${this.log()}`);
      await Bun.sleep(100);
    }
  }

  async stop(): Promise<void> {
    await this.client("stop");
    const exited = await Promise.race([this.proc.exited.then(() => true), Bun.sleep(5000).then(() => false)]);
    if (!exited) this.proc.kill("SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}
