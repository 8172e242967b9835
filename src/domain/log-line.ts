// One log event as the line(s) written for it: text for a person, with the sd-daemon level prefix journald reads
// when the stream is the journal, or one JSON object per line (time, level, msg, fields) for log shippers and SIEMs.

export const LOG_FORMATS = ["text", "json"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** The syslog level names, mildest last; console.error is `error`, console.warn `warning`, console.log `info`. */
export type LogLevel = "error" | "warning" | "info" | "debug";

/** syslog priorities, as sd-daemon.h's SD_ERR, SD_WARNING, SD_INFO, SD_DEBUG prefixes give them to journald. */
const PRIORITY: Record<LogLevel, number> = { error: 3, warning: 4, info: 6, debug: 7 };

export interface LogEvent {
  time: Date;
  level: LogLevel;
  msg: string;
  /** Further fields of the JSON object (the command, an error's name and stack); never time, level or msg. */
  fields?: Record<string, unknown>;
}

// CSI sequences (colours, cursor moves) and the carriage returns of a redrawn progress line.
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]/g;

/** The text without terminal colour or cursor sequences: a log file or the journal shows them as garbage. */
export function withoutAnsi(text: string): string {
  return text.replace(ANSI, "");
}

/**
 * The text with every line prefixed `<N>`, the syslog priority of `level`: journald (SyslogLevelPrefix=, on by
 * default) strips the prefix and files the line at that priority, so `journalctl -p warning` finds it.
 */
export function journalText(level: LogLevel, text: string): string {
  const prefix = `<${PRIORITY[level]}>`;
  return withoutAnsi(text)
    .split("\n")
    .map((line) => prefix + line)
    .join("\n");
}

/** The event as one line of JSON: a multi-line message (a stack trace, a block of lines) stays one event. */
export function jsonLine(event: LogEvent): string {
  const { time: _t, level: _l, msg: _m, ...fields } = event.fields ?? {};
  return JSON.stringify({ time: event.time.toISOString(), level: event.level, msg: withoutAnsi(event.msg), ...fields });
}

/** Parses a --log-format / ABUSE_INTEL_LOG_FORMAT value; null when it is not one. */
export function logFormatOf(raw: string): LogFormat | null {
  const value = raw.trim().toLowerCase();
  return (LOG_FORMATS as readonly string[]).includes(value) ? (value as LogFormat) : null;
}
