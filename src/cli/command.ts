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

/** The scoring options of `serve`, taken by every command that scores: give them the server's values. */
export const SCORING_FLAGS = ["--retention-days", "--half-life-days", "--scoring"];
export const SCORING_HELP = "  --retention-days N, --half-life-days N, --scoring JSON   the server's scoring settings (env as for serve)";
