// /etc/default/abuse-intel, derived from the options serve accepts (src/config.ts OPTIONS), so the file the package
// installs names every ABUSE_INTEL_* setting with its help, all commented out, and never drifts from the program.

import { JOB_SCHEDULE_ENV_PREFIX, OPTIONS } from "../../src/config";
import { LOG_FORMAT_ENV, LOG_FORMAT_FLAG } from "../../src/cli/log-output";

/** What the unit sets itself; shown as the value in force rather than the program's default. */
const SET_BY_UNIT: Record<string, string> = { ABUSE_INTEL_DATA_DIR: "/var/lib/abuse-intel" };

/** Wraps `text` into comment lines of at most `width` characters. */
function commentLines(text: string, width = 100): string[] {
  const lines: string[] = [];
  let line = "#";
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line.length + 1 + word.length > width && line !== "#") {
      lines.push(line);
      line = "#";
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines;
}

export function environmentFile(): string {
  const entries: { env: string; flag: string; help: string }[] = [
    ...OPTIONS.map((o) => ({ env: o.env, flag: o.flag, help: o.help })),
    { env: LOG_FORMAT_ENV, flag: LOG_FORMAT_FLAG, help: "log format: text (default; levels for journald) or json (one object per line: time, level, msg, fields)" },
  ];
  const out = [
    "# Settings of the abuse-intel service (abuse-intel.service reads this file as its EnvironmentFile).",
    "# Each is a serve option (`abuse-intel serve --help`, man abuse-intel); uncomment and set one, then",
    "# `systemctl restart abuse-intel`. systemd reads it, not a shell: KEY=VALUE lines, no $VARIABLE expansion.",
    "# A dpkg conffile: your changes are kept on upgrade.",
    "",
  ];
  for (const entry of entries) {
    out.push(...commentLines(`${entry.help} (${entry.flag})`));
    const inForce = SET_BY_UNIT[entry.env];
    if (inForce !== undefined) {
      out.push("# Set by the unit; the service can write only there (ProtectSystem=strict): another directory also needs");
      out.push("# ReadWritePaths= in `systemctl edit abuse-intel`.");
      out.push(`#${entry.env}=${inForce}`);
    } else {
      out.push(`#${entry.env}=`);
    }
    out.push("");
  }
  out.push(...commentLines(`The schedule of a scheduled job, a cron pattern or off (--schedule NAME=CRON); NAME as \`abuse-intel jobs list\` shows it, upper case, - as _:`));
  out.push(`#${JOB_SCHEDULE_ENV_PREFIX}RESCORE=`);
  out.push("");
  return out.join("\n");
}
