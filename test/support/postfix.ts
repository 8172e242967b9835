// Debian's Postfix for real, in a network namespace a test creates (issue 26): a config_directory and queue of the
// test's own in a temporary directory, chroot off, every listener on the namespace's loopback, mail to local
// recipients discarded once accepted. Started with `postfix -c DIR start` inside the namespace (so its resolver
// reads /etc/netns/NAME/resolv.conf) and stopped by the test. Clients speak to it with swaks from an address the
// test adds to the namespace's loopback.

import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NetworkNamespace } from "./netns";

export function postfixInstalled(): boolean {
  return existsSync("/usr/sbin/postfix") && spawnSync("swaks", ["--version"]).status === 0;
}

/**
 * One listener on 127.0.0.1: an smtpd with the `smtpd_client_restrictions` line it runs (as in main.cf), or
 * postscreen (its settings among `mainCf`) handing clients that pass to an smtpd without client restrictions.
 */
export type SmtpListener = SmtpdListener | { port: number; postscreen: true };
export interface SmtpdListener {
  port: number;
  clientRestrictions: string;
}

/** What swaks saw: whether the mail was queued, and the first 4xx/5xx reply (null when none). */
export interface SmtpOutcome {
  accepted: boolean;
  rejection: string | null;
  transcript: string;
}

// The daemons a mail server that accepts and discards needs; chroot (5th column) off everywhere.
const SERVICES = [
  "pickup    unix  n       -       n       60      1       pickup",
  "cleanup   unix  n       -       n       -       0       cleanup",
  "qmgr      unix  n       -       n       300     1       qmgr",
  "rewrite   unix  -       -       n       -       -       trivial-rewrite",
  "bounce    unix  -       -       n       -       0       bounce",
  "defer     unix  -       -       n       -       0       bounce",
  "trace     unix  -       -       n       -       0       bounce",
  "verify    unix  -       -       n       -       1       verify",
  "flush     unix  n       -       n       1000?   0       flush",
  "proxymap  unix  -       -       n       -       -       proxymap",
  "showq     unix  n       -       n       -       -       showq",
  "error     unix  -       -       n       -       -       error",
  "retry     unix  -       -       n       -       -       error",
  "discard   unix  -       -       n       -       -       discard",
  "anvil     unix  -       -       n       -       1       anvil",
  "scache    unix  -       -       n       -       1       scache",
  "postlog   unix-dgram n  -       n       -       1       postlogd",
];

export class PostfixInNamespace {
  private constructor(
    readonly ns: NetworkNamespace,
    readonly dir: string,
  ) {}

  /**
   * Writes main.cf (with `mainCf`'s lines) and master.cf (the first smtpd listener's restrictions in main.cf, the
   * others' as `-o`) and starts.
   */
  static async start(ns: NetworkNamespace, listeners: SmtpListener[], mainCf: string[] = []): Promise<PostfixInNamespace> {
    const dir = mkdtempSync(join(tmpdir(), "abuse-intel-postfix-"));
    // Postfix's daemons run as the postfix user and chdir into the queue below this directory.
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, "queue"), { mode: 0o755 });
    const smtpds = listeners.filter((l): l is SmtpdListener => "clientRestrictions" in l);
    const [main, ...others] = smtpds;
    if (main === undefined) throw new Error("Postfix needs at least one smtpd listener");
    writeFileSync(
      join(dir, "main.cf"),
      [
        "compatibility_level = 3.6",
        `queue_directory = ${dir}/queue`,
        `data_directory = ${dir}/data`,
        `maillog_file = ${dir}/maillog`,
        `maillog_file_prefixes = ${dir}`,
        "myhostname = mail.example.test",
        "mydestination = localhost",
        "inet_interfaces = 127.0.0.1",
        "inet_protocols = ipv4",
        "mynetworks = 127.0.0.0/8",
        "local_recipient_maps =",
        "local_transport = discard:",
        "default_transport = discard:",
        "smtpd_relay_restrictions = permit_mynetworks, reject_unauth_destination",
        // One session per smtpd process: an smtpd keeps the DNSBL answers it saw for its lifetime, and a test asks
        // again about the same client after the list changed.
        "max_use = 1",
        main.clientRestrictions,
        ...mainCf,
        "",
      ].join("\n"),
    );
    const smtpdLine = (l: SmtpdListener, withRestrictions: boolean) =>
      `127.0.0.1:${l.port} inet n - n - - smtpd${withRestrictions ? `\n  -o { ${l.clientRestrictions} }` : ""}`;
    const postscreen = listeners.filter((l) => "postscreen" in l);
    const postscreenLines = postscreen.length === 0 ? [] : [
      ...postscreen.map((l) => `127.0.0.1:${l.port} inet n - n - 1 postscreen`),
      "smtpd     pass  -       -       n       -       -       smtpd\n  -o { smtpd_client_restrictions = }",
      "dnsblog   unix  -       -       n       -       0       dnsblog",
      "tlsproxy  unix  -       -       n       -       0       tlsproxy",
    ];
    writeFileSync(join(dir, "master.cf"), [smtpdLine(main, false), ...others.map((l) => smtpdLine(l, true)), ...postscreenLines, ...SERVICES, ""].join("\n"));

    const postfix = new PostfixInNamespace(ns, dir);
    const started = postfix.postfix("start");
    if (started.status !== 0) {
      const log = postfix.log();
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`postfix start failed (${started.status}): ${started.stderr}${started.stdout}${log}`);
    }
    for (const l of listeners) await postfix.waitForListener(l.port);
    return postfix;
  }

  private postfix(command: string) {
    return this.ns.run("postfix", ["-c", this.dir, command]);
  }

  private async waitForListener(port: number): Promise<void> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const r = this.ns.run("swaks", ["--server", "127.0.0.1", "--port", String(port), "--quit-after", "CONNECT", "--timeout", "5"]);
      if (r.status === 0) return;
      await Bun.sleep(200);
    }
    throw new Error(`Postfix did not listen on 127.0.0.1:${port} within 20 s. Its log:\n${this.log()}`);
  }

  /** A whole mail from `client` (an address on the namespace's loopback) to a local recipient on `port`. */
  send(client: string, port: number): SmtpOutcome {
    const r = this.ns.run("swaks", [
      "--server", "127.0.0.1", "--port", String(port), "--local-interface", client, "--timeout", "20",
      "--helo", "client.example.org", "--from", "sender@example.org", "--to", "postmaster@localhost",
      "--header", "Subject: DNSBL test",
    ]);
    const transcript = `${r.stdout}${r.stderr}`;
    // swaks marks a server's error reply with `<**` and each other reply with `<-`.
    const rejection = /^ *<\*\* +([45]\d\d .*)$/m.exec(transcript)?.[1] ?? null;
    const accepted = r.status === 0 && /^ *<- +250 .*queued as/m.test(transcript);
    return { accepted, rejection, transcript };
  }

  log(): string {
    const path = join(this.dir, "maillog");
    return existsSync(path) ? readFileSync(path, "utf8").slice(-4000) : "(no maillog)";
  }

  /** `postfix stop`; the master's pid file names what to kill if it did not go. Removes the directory. */
  async stop(): Promise<void> {
    const pidFile = join(this.dir, "queue", "pid", "master.pid");
    const pid = existsSync(pidFile) ? Number(readFileSync(pidFile, "utf8").trim()) : NaN;
    this.postfix("stop");
    const deadline = Date.now() + 10_000;
    while (Number.isInteger(pid) && pid > 0 && alive(pid) && Date.now() < deadline) await Bun.sleep(100);
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) process.kill(pid, "SIGKILL");
    rmSync(this.dir, { recursive: true, force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
