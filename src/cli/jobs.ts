// `abuse-intel jobs list|run`: the scheduled jobs (contract section 9) on the local data directory. `run` runs
// one job now in this process (never the scheduler's timers, never webhook delivery): a server running on the
// same directory notices its commits within 2 s and delivers the events it queued.

import { OPTIONS, resolveConfig } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import type { JobStatus } from "../jobs/scheduler";
import { createServices } from "../app/create-services";
import { openStore } from "../store/database";
import { hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";
import { printColumns } from "./user";

const HELP = [
  "Usage: abuse-intel jobs <list|run> [options]",
  "",
  "  jobs list [--json]",
  "      Lists the jobs with their schedules (UTC), last run, its duration and error, and the next run.",
  "  jobs run NAME [--json]",
  "      Runs one job now and prints what it did; exits 1 when the run failed. Jobs: rescore, verify,",
  "      detect-threats, expire, snapshot. Events it queues are delivered by the running server.",
  "",
  "  --schedule NAME=CRON  a job's schedule, as for serve (repeatable) [ABUSE_INTEL_SCHEDULE_<NAME>]",
  SCORING_HELP,
  "  --geo-mmdb FILE        as for serve",
  "  --sign-key FILE        as for serve: sign the snapshot `jobs run snapshot` makes [ABUSE_INTEL_SIGN_KEY]",
  DATA_DIR_HELP,
].join("\n");

// --sign-key as serve takes it: a snapshot made here is signed like the server's (edges refuse unsigned ones).
const CONFIG_FLAGS = OPTIONS.filter((o) => ["--data-dir", "--geo-mmdb", "--sign-key", ...SCORING_FLAGS].includes(o.flag)).map((o) => o.flag);

export const jobsCommand: Command = {
  name: "jobs",
  summary: "list the scheduled jobs or run one now",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    if (sub !== "list" && sub !== "run") {
      throw new AppError("bad_request", sub === undefined ? `a subcommand is needed\n\n${HELP}` : `unknown subcommand "${sub}"\n\n${HELP}`);
    }
    const args = parseArgs(rest, { values: [...CONFIG_FLAGS, "--schedule"], switches: ["--json"] });
    const expected = sub === "run" ? 1 : 0;
    if (args.positionals.length !== expected) {
      throw new AppError("bad_request", sub === "run" ? "jobs run takes one job NAME" : `unexpected argument "${args.positionals[0]}"`);
    }
    const json = hasSwitch(args, "--json");
    const config = resolveConfig(args.flags);
    const store = openStore(config.dataDir, { sync: config.syncMode });
    try {
      const services = await createServices({ config, clock: systemClock, store, webhookDispatcher: { autoStart: false } });
      try {
        if (sub === "list") {
          const jobs = services.scheduler.jobs();
          if (json) console.log(JSON.stringify(jobs, null, 2));
          else printColumns([["NAME", "SCHEDULE", "LAST RUN", "DURATION", "NEXT RUN", "LAST ERROR"], ...jobs.map(row)]);
          return 0;
        }
        const status = await services.scheduler.runNow(args.positionals[0]);
        if (json) console.log(JSON.stringify(status, null, 2));
        else if (status.lastError === null) console.log(`${status.name}: done in ${status.lastDurationMs} ms: ${JSON.stringify(status.lastResult)}`);
        if (status.lastError !== null) {
          console.error(`abuse-intel jobs run: ${status.name} failed: ${status.lastError}`);
          return 1;
        }
        return 0;
      } finally {
        await services.stop();
      }
    } finally {
      store.close();
    }
  },
};

function row(job: JobStatus): string[] {
  return [
    job.name,
    job.schedule,
    job.lastRunAt ?? "never",
    job.lastDurationMs === null ? "-" : `${job.lastDurationMs} ms`,
    job.nextRunAt ?? "-",
    job.lastError ?? "-",
  ];
}
