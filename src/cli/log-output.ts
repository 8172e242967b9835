// The program's log as journald and log shippers read it: installed once by main.ts, it formats what every module
// writes through console.* (and, in json, raw lines on stderr) without those modules knowing (src/domain/log-line).

import { fstatSync } from "node:fs";
import { format } from "node:util";
import { AppError } from "../domain/errors";
import { journalText, jsonLine, logFormatOf, type LogFormat, type LogLevel } from "../domain/log-line";

export const LOG_FORMAT_FLAG = "--log-format";
export const LOG_FORMAT_ENV = "ABUSE_INTEL_LOG_FORMAT";

/**
 * The log format asked for (`--log-format text|json` anywhere on the command line, else ABUSE_INTEL_LOG_FORMAT,
 * else text) and the arguments without the flag, which every command accepts this way.
 */
export function takeLogFormat(argv: string[], env: Record<string, string | undefined> = process.env): { format: LogFormat; argv: string[] } {
  const rest: string[] = [];
  let raw: { value: string; name: string } | null = env[LOG_FORMAT_ENV] ? { value: env[LOG_FORMAT_ENV]!, name: LOG_FORMAT_ENV } : null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === LOG_FORMAT_FLAG) {
      if (i + 1 >= argv.length) throw new AppError("bad_request", `${LOG_FORMAT_FLAG} needs a value: text or json`);
      raw = { value: argv[++i], name: LOG_FORMAT_FLAG };
    } else if (arg.startsWith(`${LOG_FORMAT_FLAG}=`)) {
      raw = { value: arg.slice(LOG_FORMAT_FLAG.length + 1), name: LOG_FORMAT_FLAG };
    } else {
      rest.push(arg);
    }
  }
  if (raw === null) return { format: "text", argv: rest };
  const parsed = logFormatOf(raw.value);
  if (parsed === null) throw new AppError("bad_request", `${raw.name} must be text or json, got "${raw.value}"`);
  return { format: parsed, argv: rest };
}

/**
 * Whether the file descriptor is the stream systemd connected to journald: JOURNAL_STREAM names its device and
 * inode (systemd.exec(5)), so output redirected elsewhere by the service itself is not mistaken for it.
 */
export function isJournalStream(fd: 1 | 2, env: Record<string, string | undefined> = process.env): boolean {
  const named = env.JOURNAL_STREAM;
  if (!named) return false;
  try {
    const stat = fstatSync(fd);
    return named === `${stat.dev}:${stat.ino}`;
  } catch {
    return false;
  }
}

let installedFormat: LogFormat | null = null;

/**
 * True when what is printed is a log kept and read by others (the journal, readable by the adm group, or JSON
 * shipped to a SIEM) rather than a terminal: secrets such as the first start's password are not printed then.
 */
export function printedOutputIsKeptLog(): boolean {
  return installedFormat === "json" || isJournalStream(1) || isJournalStream(2);
}

type ConsoleMethod = "log" | "info" | "debug" | "warn" | "error";
const LEVEL_OF: Record<ConsoleMethod, LogLevel> = { log: "info", info: "info", debug: "debug", warn: "warning", error: "error" };

/**
 * Formats console.* output from now on. text: unchanged, except that a stream connected to the journal gets each
 * line's level as journald's `<N>` prefix; json: one object per event on the stream console would have used (with
 * that prefix too on the journal), and raw lines written to stderr (the access log) become info events. `command`
 * is a field of every JSON event.
 */
export function installLogOutput(logFormat: LogFormat, command: string): void {
  installedFormat = logFormat;
  const original = { log: console.log, info: console.info, debug: console.debug, warn: console.warn, error: console.error };
  const journalOut = isJournalStream(1);
  const journalErr = isJournalStream(2);
  if (logFormat === "text") {
    for (const method of Object.keys(LEVEL_OF) as ConsoleMethod[]) {
      const toStderr = method === "warn" || method === "error";
      if (!(toStderr ? journalErr : journalOut)) continue;
      console[method] = (...args: unknown[]) => original[method](journalText(LEVEL_OF[method], format(...args)));
    }
    return;
  }
  const emit = (method: ConsoleMethod, level: LogLevel, args: unknown[]) => {
    const error = args.find((a): a is Error => a instanceof Error);
    const msg = format(...args.map((a) => (a instanceof Error ? a.message : a)));
    const fields: Record<string, unknown> = { command };
    if (error) fields.error = { name: error.name, message: error.message, stack: error.stack };
    const line = jsonLine({ time: new Date(), level, msg, fields });
    const journal = method === "warn" || method === "error" ? journalErr : journalOut;
    original[method](journal ? journalText(level, line) : line);
  };
  for (const method of Object.keys(LEVEL_OF) as ConsoleMethod[]) {
    console[method] = (...args: unknown[]) => emit(method, LEVEL_OF[method], args);
  }
  // Lines written straight to stderr (the access log, an import's bad rows): one info event per complete line;
  // a progress line redrawn with \r keeps only what was drawn last.
  let partial = "";
  const write = (chunk: unknown, encodingOrDone?: unknown, done?: unknown): boolean => {
    partial += typeof chunk === "string" ? chunk : Buffer.from(chunk as Uint8Array).toString("utf8");
    const lines = partial.split("\n");
    partial = lines.pop()!;
    for (const line of lines) emit("error", "info", [line.slice(line.lastIndexOf("\r") + 1)]);
    const callback = typeof encodingOrDone === "function" ? encodingOrDone : done;
    if (typeof callback === "function") queueMicrotask(() => callback());
    return true;
  };
  process.stderr.write = write as typeof process.stderr.write;
}
