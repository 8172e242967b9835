// `abuse-intel firewall sync` (contract 19): the executable as its own bouncer on the firewall host, keeping an
// nftables or ipset set equal to the appliance's blocklist. Every option is checked before anything is fetched
// or touched (a bad one exits 2 naming it); then one sync (--once, exit 1 if it failed) or a loop until SIGTERM.

import { asSeconds, asUrl } from "../config";
import { parseBlocklistParams } from "../domain/blocklist/query";
import { AppError } from "../domain/errors";
import { describeTarget, parseIpsetTarget, parseNftTarget, type SyncTarget } from "../domain/firewall/sync-target";
import { FirewallSync, syncLoop } from "../services/firewall-sync/firewall-sync";
import { IpsetSets } from "../services/firewall-sync/ipset-sets";
import { NftSets } from "../services/firewall-sync/nft-sets";
import { flag, hasSwitch, parseArgs } from "./args";
import type { Command } from "./command";

const HELP = [
  "Usage: abuse-intel firewall sync --url URL --key KEY (--nft TABLE/SET | --ipset SET) [options]",
  "",
  "Keeps a kernel set equal to the appliance's blocklist, on the firewall host: each changed list goes in whole",
  "in one step (one nft transaction; ipset restore into a staging set and swap); a failed pull or command leaves",
  "the set as it was. Adds no rule: see the README, \"Firewall sync\", for the rule that drops what the set holds.",
  "",
  "  --url URL              the appliance, primary or edge (http or https)",
  "  --key KEY              an API key of the appliance (env ABUSE_INTEL_SYNC_KEY)",
  "  --nft TABLE/SET        table inet TABLE, interval sets SET (ipv4_addr) and SET6 (ipv6_addr)",
  "  --ipset SET            hash:net sets SET (inet) and SET6 (inet6)",
  "  --risk-level LEVEL     minimum risk level listed: LOW, MEDIUM, HIGH (default, as for bouncers), CRITICAL",
  "  --category C,...       only addresses with any of these categories",
  "  --every DURATION       time between syncs (default 60s; 30s, 5m, 1h)",
  "  --once                 one sync, then exit: 0 when it succeeded, 1 when not",
  "  --timeout DURATION     the longest one pull may take, connect to last byte (default 30s)",
].join("\n");

export const firewallCommand: Command = {
  name: "firewall",
  summary: "firewall sync: keep an nftables or ipset set equal to the appliance's blocklist",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    if (sub !== "sync") throw new AppError("bad_request", sub === undefined ? `firewall needs a subcommand: sync\n\n${HELP}` : `unknown subcommand "${sub}" (there is: sync)`);
    const options = parseSyncOptions(rest);
    const sets = options.target.kind === "nft" ? new NftSets({ table: options.target.table, sets: options.target.sets }) : new IpsetSets(options.target.sets);
    const sync = new FirewallSync(options.pull, sets, describeTarget(options.target));
    if (options.once) {
      const report = await sync.syncOnce();
      (report.ok ? console.log : console.error)(report.line);
      return report.ok ? 0 : 1;
    }
    await syncLoop(sync, options.everyMs, (r) => (r.ok ? console.log : console.error)(r.line), stopOnSignals());
    console.error("firewall sync: stopped; the sets are left in place");
    return 0;
  },
};

interface SyncOptions {
  target: SyncTarget;
  pull: ConstructorParameters<typeof FirewallSync>[0];
  once: boolean;
  everyMs: number;
}

function parseSyncOptions(argv: string[]): SyncOptions {
  const args = parseArgs(argv, { values: ["--url", "--key", "--nft", "--ipset", "--risk-level", "--category", "--every", "--timeout"], switches: ["--once"] });
  if (args.positionals.length > 0) throw new AppError("bad_request", `firewall sync takes no arguments, got "${args.positionals[0]}"`);
  const url = flag(args, "--url");
  if (url === undefined) throw new AppError("bad_request", "--url is required: the appliance's URL (http://HOST:PORT)");
  const key = flag(args, "--key") ?? process.env.ABUSE_INTEL_SYNC_KEY;
  if (key === undefined || key.trim() === "") throw new AppError("bad_request", "--key is required (or ABUSE_INTEL_SYNC_KEY): an API key of the appliance");
  const nft = flag(args, "--nft");
  const ipset = flag(args, "--ipset");
  if ((nft === undefined) === (ipset === undefined)) throw new AppError("bad_request", "give one of --nft TABLE/SET and --ipset SET");
  const target = nft !== undefined ? parseNftTarget(nft) : parseIpsetTarget(ipset as string);
  if (typeof target === "string") throw new AppError("bad_request", `${nft !== undefined ? "--nft" : "--ipset"} ${target}`);
  const once = hasSwitch(args, "--once");
  const every = flag(args, "--every");
  if (once && every !== undefined) throw new AppError("bad_request", "--every and --once do not go together: --once syncs one time and exits");
  // HIGH by default, as a bouncer's filter (contract 14 and 19): a firewall drops what is HIGH or worse.
  const riskLevel = flag(args, "--risk-level") ?? "HIGH";
  const categories = args.flags.get("--category")?.join(",") ?? null;
  // The appliance's own parser, so the sync refuses what the appliance would, before asking it.
  try {
    parseBlocklistParams({ riskLevel, category: categories ?? undefined, format: target.kind });
  } catch (error) {
    const details = error instanceof AppError ? (error.details ?? []) : [];
    const named = details.map((d) => `${d.field === "riskLevel" ? "--risk-level" : d.field === "category" ? "--category" : d.field}: ${d.message}`);
    throw new AppError("bad_request", named.length > 0 ? named.join("; ") : (error as Error).message);
  }
  return {
    target,
    once,
    everyMs: asSeconds(every ?? "60s", "--every") * 1000,
    pull: {
      url: asUrl(url, "--url"),
      key,
      format: target.kind,
      riskLevel,
      categories,
      timeoutMs: asSeconds(flag(args, "--timeout") ?? "30s", "--timeout") * 1000,
    },
  };
}

/** SIGTERM and SIGINT end the loop between syncs: one under way completes first. */
function stopOnSignals(): { stopped(): boolean; sleep(ms: number): Promise<void> } {
  let stopped = false;
  let wake: (() => void) | null = null;
  const stop = () => {
    stopped = true;
    wake?.();
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  return {
    stopped: () => stopped,
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
  };
}
