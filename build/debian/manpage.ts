// The man page abuse-intel(1), written from the executable's own --help texts (the program's usage and each
// command's), so the page says what the installed program accepts.

export interface HelpTexts {
  version: string;
  /** `abuse-intel --help`. */
  usage: string;
  /** Each command with its one-line summary and its `--help`, in the order the usage lists them. */
  commands: { name: string; summary: string; help: string }[];
  /** The page's date, YYYY-MM-DD. */
  date: string;
}

/** Text safe in roff: backslashes doubled, and a line starting with . or ' guarded so it is not a request. */
function roffText(text: string): string {
  return text
    .split("\n")
    .map((line) => {
      const escaped = line.replaceAll("\\", "\\e").replaceAll("-", "\\-");
      return /^[.']/.test(escaped) ? `\\&${escaped}` : escaped;
    })
    .join("\n");
}

/** A block shown as written (the help texts are laid out in columns). */
function verbatim(text: string): string[] {
  return [".nf", roffText(text.trimEnd()), ".fi"];
}

/** The commands the usage lists: `  name   summary` lines after "Commands:" up to the first blank line. */
export function commandsOfUsage(usage: string): { name: string; summary: string }[] {
  const lines = usage.split("\n");
  const start = lines.findIndex((l) => l.trim() === "Commands:");
  if (start < 0) return [];
  const out: { name: string; summary: string }[] = [];
  for (const line of lines.slice(start + 1)) {
    const match = /^ {2}([a-z][\w-]*)\s{2,}(.+)$/.exec(line);
    if (!match) break;
    out.push({ name: match[1], summary: match[2].trim() });
  }
  return out;
}

export function manPage(help: HelpTexts): string {
  const lines = [
    `.TH ABUSE\\-INTEL 1 "${help.date}" "abuse\\-intel ${roffText(help.version)}" "User Commands"`,
    ".SH NAME",
    "abuse\\-intel \\- abuse\\-intelligence IP reputation service in one executable",
    ".SH SYNOPSIS",
    ".B abuse\\-intel",
    ".I command",
    "[\\fIoptions\\fR]",
    ".br",
    ".B abuse\\-intel",
    ".I command",
    ".B \\-\\-help",
    ".SH DESCRIPTION",
    "abuse\\-intel keeps a database of abusive IPv4 and IPv6 addresses that clients look up, report to and",
    "download as firewall blocklists. The HTTP API, the scheduled jobs and the command\\-line tools are commands",
    "of this one program. The Debian package runs",
    ".B abuse\\-intel serve",
    "as the service abuse\\-intel.service, with the settings of",
    ".I /etc/default/abuse\\-intel",
    "and its data in",
    ".IR /var/lib/abuse\\-intel .",
    ".PP",
    "Options given on the command line beat the ABUSE_INTEL_* environment variables, which beat the defaults.",
    ".SH USAGE",
    ...verbatim(help.usage),
    ".SH COMMANDS",
  ];
  for (const command of help.commands) {
    lines.push(`.SS ${roffText(command.name)}`, roffText(command.summary) + ".", ".PP", ...verbatim(command.help));
  }
  lines.push(
    ".SH FILES",
    ".TP",
    ".I /etc/default/abuse\\-intel",
    "the service's settings, every ABUSE_INTEL_* variable commented out with its help",
    ".TP",
    ".I /var/lib/abuse\\-intel",
    "the data directory: the database, the token secret, the index",
    ".TP",
    ".I /var/lib/abuse\\-intel/initial\\-credentials.txt",
    "the first administrator's email, password and API key, readable by root only; delete it once stored",
    ".SH SEE ALSO",
    ".BR systemctl (1),",
    ".BR journalctl (1)",
    "",
  );
  return lines.join("\n");
}
