// Runs a service unit's ExecStart the way systemd would, where no systemd runs (CI containers): the unit's User/
// Group with only its ambient and bounding capabilities and no new privileges (setpriv), its Environment= and
// EnvironmentFile=, WorkingDirectory=, StateDirectory=, UMask=, a notification socket (Type=notify) and the output
// on a stream named by JOURNAL_STREAM, as journald's is; ExecStartPost= once READY=1 arrives. ProtectSystem=strict,
// PrivateTmp= and ProtectHome= are imitated in a mount namespace of the service's own (unshare).

import { spawn, spawnSync } from "node:child_process";
import { chmodSync, closeSync, existsSync, fstatSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { track } from "./binary";

/** The [Service] section's settings, each key with its values in order (a key may repeat). */
export type UnitSettings = Map<string, string[]>;

export function parseUnit(text: string, section = "Service"): UnitSettings {
  const settings: UnitSettings = new Map();
  let current = "";
  const lines = text.replace(/\\\n/g, " ").split("\n");
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      current = header[1];
      continue;
    }
    if (current !== section) continue;
    const eq = line.indexOf("=");
    const key = line.slice(0, eq).trim();
    const value = line.slice(eq + 1).trim();
    // An empty assignment resets the list, as in systemd.
    settings.set(key, value === "" ? [] : [...(settings.get(key) ?? []), value]);
  }
  return settings;
}

/** Words of a command line or an Environment= value, with "double" and 'single' quotes removed. */
function words(text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(/"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g)) out.push(match[1] ?? match[2] ?? match[3]);
  return out;
}

/** An EnvironmentFile's assignments (systemd's format: KEY=VALUE lines, # and ; comments, quotes removed). */
export function parseEnvironmentFile(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const eq = line.indexOf("=");
    if (eq <= 0) continue;
    let value = line.slice(eq + 1).trim();
    if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.at(-1) === value[0]) value = value.slice(1, -1);
    env[line.slice(0, eq).trim()] = value;
  }
  return env;
}

const one = (settings: UnitSettings, key: string): string | undefined => settings.get(key)?.at(-1);
const capsOf = (value: string | undefined) => (value ? value.split(/\s+/).map((c) => `+${c.replace(/^CAP_/, "").toLowerCase()}`) : []);

/**
 * The command that puts the service in a mount namespace as systemd's sandboxing would: with ProtectSystem=strict
 * every mount read-only but the state directories (and /proc, /sys, /dev); PrivateTmp= an empty /tmp and /var/tmp;
 * ProtectHome=yes empty read-only /home, /root and /run/user. Empty when the unit asks for none of these.
 */
function sandboxOf(unit: UnitSettings, writable: string[]): string[] {
  const steps: string[] = ["set -e"];
  if (one(unit, "ProtectSystem") === "strict") {
    for (const dir of writable) steps.push(`mount --bind '${dir}' '${dir}'`);
    steps.push(
      `awk '{print $5}' /proc/self/mountinfo | grep -v -E '^/(proc|sys|dev)(/|$)' | sort -u | while read -r mp; do mount -o remount,bind,ro "$mp"; done`,
    );
    for (const dir of writable) steps.push(`mount -o remount,bind,rw '${dir}'`);
  }
  if (one(unit, "PrivateTmp") === "yes") steps.push("mount -t tmpfs -o mode=1777 tmpfs /tmp", "mount -t tmpfs -o mode=1777 tmpfs /var/tmp");
  if (one(unit, "ProtectHome") === "yes") {
    for (const dir of ["/home", "/root", "/run/user"]) steps.push(`if [ -d ${dir} ]; then mount -t tmpfs -o ro,mode=0755 tmpfs ${dir}; fi`);
  }
  if (steps.length === 1) return [];
  return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", `${steps.join("\n")}\nexec "$@"`, "sandbox"];
}

export interface UnitProcess {
  proc: Subprocess;
  /** What the process wrote to its stdout and stderr (one file, as journald's one stream). */
  output(): string;
  /** Each message the notification socket received, in order. */
  notifications(): string[];
  /** Resolves once a notification matches, or rejects with the output when the process exits or time runs out. */
  waitForNotification(pattern: RegExp, timeoutMs: number): Promise<string>;
  /** Runs ExecStartPost= as systemd does after READY=1 (`+` with full privileges, `-` failure ignored). */
  runExecStartPost(): void;
  /** SIGTERM, as `systemctl stop` sends it, SIGKILL after `timeoutMs`; the exit code. */
  stop(timeoutMs?: number): Promise<number | null>;
}

/**
 * Starts the unit's ExecStart. `overrides` are added after EnvironmentFile= (as a test's drop-in would set them).
 * The caller stops the process; the notification socket's reader is stopped with it.
 */
export async function startUnit(unitFile: string, overrides: Record<string, string> = {}): Promise<UnitProcess> {
  const unit = parseUnit(readFileSync(unitFile, "utf8"));
  const user = one(unit, "User") ?? "root";
  const group = one(unit, "Group") ?? user;
  const passwd = spawnSync("getent", ["passwd", user], { encoding: "utf8" }).stdout.trim().split(":");
  if (passwd.length < 7) throw new Error(`the unit's user ${user} does not exist`);

  // Under /run, as systemd's own notification socket: the service's /tmp is its own (PrivateTmp=).
  const work = mkdtempSync(join(existsSync("/run") ? "/run" : tmpdir(), "abuse-intel-unit-"));
  chmodSync(work, 0o755);
  const env: Record<string, string> = {
    PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    USER: user,
    LOGNAME: user,
    HOME: passwd[5],
    SHELL: passwd[6],
    INVOCATION_ID: crypto.randomUUID().replaceAll("-", ""),
  };
  for (const name of unit.get("StateDirectory") ?? []) {
    for (const dir of name.split(/\s+/)) {
      const path = join("/var/lib", dir);
      mkdirSync(path, { recursive: true });
      spawnSync("chown", [`${user}:${group}`, path]);
      chmodSync(path, Number.parseInt(one(unit, "StateDirectoryMode") ?? "0755", 8));
      env.STATE_DIRECTORY = path;
    }
  }
  for (const value of unit.get("Environment") ?? []) {
    for (const assignment of words(value)) {
      const eq = assignment.indexOf("=");
      env[assignment.slice(0, eq)] = assignment.slice(eq + 1);
    }
  }
  for (const value of unit.get("EnvironmentFile") ?? []) {
    const optional = value.startsWith("-");
    const path = optional ? value.slice(1) : value;
    try {
      Object.assign(env, parseEnvironmentFile(readFileSync(path, "utf8")));
    } catch (error) {
      if (!optional) throw error;
    }
  }
  Object.assign(env, overrides);

  let notified: string[] = [];
  let notifier: ReturnType<typeof spawn> | null = null;
  if (one(unit, "Type") === "notify") {
    const socket = join(work, "notify");
    notifier = spawn("python3", [join(import.meta.dir, "notify-socket.py"), socket], { stdio: ["ignore", "pipe", "inherit"] });
    let buffered = "";
    const listening = new Promise<void>((resolve, reject) => {
      notifier!.on("error", reject);
      notifier!.stdout!.on("data", (chunk: Buffer) => {
        buffered += chunk.toString("utf8");
        const lines = buffered.split("\n");
        buffered = lines.pop()!;
        for (const line of lines) {
          if (line === "listening") resolve();
          else notified = [...notified, line];
        }
      });
    });
    await listening;
    env.NOTIFY_SOCKET = socket;
  }

  const logPath = join(work, "journal");
  const log = openSync(logPath, "w");
  const stat = fstatSync(log);
  env.JOURNAL_STREAM = `${stat.dev}:${stat.ino}`;

  const ambient = capsOf(one(unit, "AmbientCapabilities"));
  const bounding = capsOf(one(unit, "CapabilityBoundingSet"));
  const setpriv = [
    "setpriv",
    `--reuid=${user}`,
    `--regid=${group}`,
    "--init-groups",
    ...(one(unit, "NoNewPrivileges") === "yes" ? ["--no-new-privs"] : []),
    `--inh-caps=${["-all", ...ambient].join(",")}`,
    `--ambient-caps=${["-all", ...ambient].join(",")}`,
    `--bounding-set=${["-all", ...bounding].join(",")}`,
    "--",
  ];
  const execStart = words(one(unit, "ExecStart") ?? "");
  const umask = one(unit, "UMask") ?? "0022";
  const sandbox = sandboxOf(unit, env.STATE_DIRECTORY ? [env.STATE_DIRECTORY] : []);
  const proc = Bun.spawn([...sandbox, "/bin/sh", "-c", 'umask "$0" && exec "$@"', umask, ...setpriv, ...execStart], {
    cwd: one(unit, "WorkingDirectory") ?? "/",
    env,
    stdin: "ignore",
    stdout: log,
    stderr: log,
  });
  track(proc);
  closeSync(log);
  const exited = proc.exited.then(() => {
    notifier?.kill();
  });

  let finalOutput: string | null = null;
  const output = () => finalOutput ?? readFileSync(logPath, "utf8");
  const waitForNotification = async (pattern: RegExp, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const found = notified.find((n) => pattern.test(n));
      if (found !== undefined) return found;
      if (proc.exitCode !== null) throw new Error(`the service exited (code ${proc.exitCode}) before ${pattern}:\n${output()}`);
      await Bun.sleep(50);
    }
    throw new Error(`no notification ${pattern} within ${timeoutMs} ms (got ${JSON.stringify(notified)}):\n${output()}`);
  };
  return {
    proc,
    output,
    notifications: () => notified,
    waitForNotification,
    runExecStartPost() {
      for (const value of unit.get("ExecStartPost") ?? []) {
        const prefixes = /^[-+@:!]*/.exec(value)![0];
        const command = words(value.slice(prefixes.length));
        const asRoot = prefixes.includes("+");
        const result = spawnSync(asRoot ? command[0] : "setpriv", asRoot ? command.slice(1) : [...setpriv, ...command], { encoding: "utf8", env });
        if (result.status !== 0 && !prefixes.includes("-")) throw new Error(`ExecStartPost ${value} failed: ${result.stderr}`);
      }
    },
    async stop(timeoutMs = 30_000) {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
        await proc.exited;
        clearTimeout(timer);
      }
      await exited;
      finalOutput = output();
      rmSync(work, { recursive: true, force: true });
      return proc.exitCode;
    },
  };
}

/** Whether `path` exists (stat follows no symlink here: the caller asks for the path itself). */
export function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}
