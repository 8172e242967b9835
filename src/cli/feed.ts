// `abuse-intel feed add|list|remove|refresh`: feeds refreshed on a schedule from a URL or a file (contract 12),
// on the local data directory. A running server picks a new or removed feed up within 2 seconds and runs its
// timer; these commands refresh once by themselves (`add` and `refresh`).

import { resolve } from "node:path";
import { resolveConfig } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { createFeedServices } from "../app/feed-services";
import { parseFeedDefinition } from "../services/feeds/feeds";
import { openStore } from "../store/database";
import { flag, hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command, SCORING_FLAGS, SCORING_HELP } from "./command";
import { printColumns } from "./user";

const HELP = [
  "Usage: abuse-intel feed <add|list|remove|refresh> [options]",
  "",
  "  feed add NAME (--url URL | --file PATH) --category C [--severity N] [--schedule CRON]",
  "      a feed refreshed from a URL (with If-None-Match / If-Modified-Since) or a file (a mounted share); each",
  "      refresh replaces its entries; refreshed once now. --schedule takes a croner pattern in UTC, seconds as a",
  "      sixth field allowed (default hourly: '0 * * * *'). --severity 1-5, default 4. A relative --file PATH is",
  "      stored as the absolute path it names from here, so the server finds it from its own directory.",
  "  feed list [--json]      each feed with its entries, last refresh and last error",
  "  feed remove NAME        remove a feed and its listings",
  "  feed refresh NAME       refresh a scheduled feed now",
  "",
  "A failed refresh (unreachable, an HTTP error, a list with no valid entry) keeps the previous entries and records",
  "the error, shown by feed list. The feed's timer runs in the server (abuse-intel serve).",
  SCORING_HELP,
  DATA_DIR_HELP,
].join("\n");

export const feedCommand: Command = {
  name: "feed",
  summary: "manage feeds refreshed on a schedule (add, list, remove, refresh)",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    const args = parseArgs(rest, {
      values: ["--data-dir", "--url", "--file", "--category", "--severity", "--schedule", ...SCORING_FLAGS],
      switches: ["--json"],
    });
    if (sub !== "add" && sub !== "list" && sub !== "remove" && sub !== "refresh") throw new AppError("bad_request", `feed takes add, list, remove or refresh\n\n${HELP}`);
    const wanted = sub === "list" ? 0 : 1;
    if (args.positionals.length !== wanted) throw new AppError("bad_request", `feed ${sub} takes ${wanted === 0 ? "no arguments" : "one NAME"}`);
    // --schedule is the feed's own here, not a job schedule of the server's configuration.
    const config = resolveConfig(new Map([...args.flags].filter(([name]) => name === "--data-dir" || SCORING_FLAGS.includes(name))));
    const store = openStore(config.dataDir, { sync: config.syncMode });
    try {
      const feeds = createFeedServices(store, config, systemClock);
      if (sub === "add") {
        const definition = parseFeedDefinition({
          name: args.positionals[0],
          url: flag(args, "--url"),
          file: absolutePath(flag(args, "--file")),
          category: flag(args, "--category"),
          severity: flag(args, "--severity"),
          schedule: flag(args, "--schedule"),
        });
        const { feed, refresh } = await feeds.add(definition);
        console.log(`added feed ${feed.name} (${feed.schedule}): ${refresh.result === "failed" ? `first refresh failed: ${refresh.error}` : `${feed.entries} entries`}`);
        return refresh.result === "failed" ? 1 : 0;
      }
      if (sub === "refresh") {
        const name = args.positionals[0];
        const feed = feeds.get(name);
        if (feed === null) throw new AppError("not_found", `no feed named ${name}`);
        if (feed.source === null) throw new AppError("bad_request", `${name} is a one-off import: it has no source to refresh from`);
        const outcome = await feeds.refresh(name);
        console.log(outcome.result === "failed" ? `refresh of ${name} failed, previous entries kept: ${outcome.error}` : `${name}: ${outcome.result}, ${outcome.entries} entries`);
        return outcome.result === "failed" ? 1 : 0;
      }
      if (sub === "remove") {
        const name = args.positionals[0];
        if (feeds.get(name) === null) throw new AppError("not_found", `no feed named ${name}`);
        feeds.remove(name);
        console.log(`removed feed ${name}`);
        return 0;
      }
      const list = feeds.list();
      if (hasSwitch(args, "--json")) console.log(JSON.stringify(list, null, 2));
      else if (list.length === 0) console.error("no feeds");
      else {
        printColumns([
          ["NAME", "CATEGORY", "SEV", "ENTRIES", "SOURCE", "SCHEDULE", "LAST REFRESH", "LAST ERROR"],
          ...list.map((f) => [
            f.name,
            f.category,
            String(f.severity),
            String(f.entries),
            f.source === null ? "(import)" : "url" in f.source ? f.source.url : f.source.file,
            f.schedule ?? "-",
            f.lastRefreshAt ?? f.updatedAt,
            f.lastError ?? "-",
          ]),
        ]);
      }
      return 0;
    } finally {
      store.close();
    }
  },
};

/** The path as the operator meant it, from the shell they typed it in: the server refreshes from elsewhere. */
function absolutePath(path: string | undefined): string | undefined {
  return path === undefined || path === "" ? path : resolve(path);
}
