// What every command of the executable is: a name, a one-line summary, a help text and a run function that
// returns the exit code.

export interface Command {
  name: string;
  summary: string;
  help: string;
  run(argv: string[]): Promise<number>;
}

/** The data-directory options every command that touches the database takes, for help texts. */
export const DATA_DIR_HELP = "  --data-dir DIR        data directory (env ABUSE_INTEL_DATA_DIR, default ./data)";
