// `abuse-intel bouncer add|list|delete`: keys for CrowdSec firewall bouncers (contract 14), each printed once with
// a configuration snippet for its mode. A bouncer added here pulls from a server on the same data directory at once.

import { resolveConfig } from "../config";
import { systemClock } from "../domain/clock";
import { AppError } from "../domain/errors";
import { Accounts } from "../services/accounts/accounts";
import { ApiKeys } from "../services/accounts/api-keys";
import { BOUNCER_MODES, BouncerRegistry, type BouncerView } from "../services/bouncers/registry";
import { BouncerTables, type BouncerMode } from "../store/bouncers";
import { openStore } from "../store/database";
import { flag, hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command } from "./command";
import { printColumns } from "./user";

const HELP = [
  "Usage: abuse-intel bouncer <add|list|delete> [options]",
  "",
  "  bouncer add NAME [--risk-level HIGH] [--category C,...] [--mode nftables|ipset|iptables] [--duration 596h]",
  "      Creates an API key for a CrowdSec firewall bouncer and prints it once, with the lines of the bouncer's",
  "      configuration to change (api_url, api_key) and, for ipset mode, the two sets to create first. The bouncer",
  "      is sent every address and network at --risk-level or worse (default HIGH), of --category when given,",
  "      not allowlisted, each for --duration (a Go duration, at most and by default 596h: ipset's longest",
  "      timeout); entries still listed are sent again before they run out. In nftables mode IPv4 networks of",
  "      /22 or smaller also go out address by address (that mode keeps only the first address of a range).",
  "  bouncer list [--json]   each bouncer with its filter, last pull and the address it came from",
  "  bouncer delete NAME     revokes its key; its pulls get 403",
  "",
  "Start the appliance before the bouncer: a bouncer whose first pull fails exits.",
  DATA_DIR_HELP,
].join("\n");

/** The configuration lines a bouncer of `mode` needs, for an appliance at `url`. */
export function bouncerSnippet(mode: BouncerMode, url: string, key: string): string {
  const lines = [
    "# /etc/crowdsec/bouncers/crowdsec-firewall-bouncer.yaml: change these lines, keep the rest",
    `mode: ${mode}`,
    `api_url: ${url}`,
    `api_key: ${key}`,
  ];
  if (mode === "ipset") {
    lines.push(
      "# ipset mode fills two sets it does not create: create them once, before the bouncer starts",
      "ipset create crowdsec-blacklists hash:net timeout 0 maxelem 2000000",
      "ipset create crowdsec6-blacklists hash:net timeout 0 family inet6 maxelem 2000000",
      "# and drop what they hold, e.g.: iptables -I INPUT -m set --match-set crowdsec-blacklists src -j DROP",
    );
  }
  if (mode === "nftables") lines.push("# IPv6 networks and IPv4 networks wider than /22 are enforced only in ipset mode (nftables mode keeps a range's first address)");
  return lines.join("\n");
}

export const bouncerCommand: Command = {
  name: "bouncer",
  summary: "manage keys for CrowdSec firewall bouncers (add, list, delete)",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    const args = parseArgs(rest, { values: ["--data-dir", "--risk-level", "--category", "--mode", "--duration", "--url"], switches: ["--json"] });
    const config = resolveConfig(args.flags);
    const wanted = sub === "add" || sub === "delete" ? 1 : 0;
    if (sub !== undefined && args.positionals.length !== wanted) {
      throw new AppError("bad_request", wanted === 1 ? `bouncer ${sub} takes one NAME` : `unexpected argument "${args.positionals[0]}"`);
    }
    const store = openStore(config.dataDir);
    try {
      const registry = new BouncerRegistry({ store, tables: new BouncerTables(store), accounts: new Accounts(store, systemClock), apiKeys: new ApiKeys(store, systemClock), clock: systemClock });
      switch (sub) {
        case "add": {
          const mode = flag(args, "--mode");
          if (mode !== undefined && !BOUNCER_MODES.includes(mode as BouncerMode)) throw new AppError("bad_request", `--mode is one of ${BOUNCER_MODES.join(", ")}`);
          const { bouncer, key } = await registry.add({
            name: args.positionals[0],
            minimumRisk: flag(args, "--risk-level"),
            categories: flag(args, "--category"),
            mode,
            duration: flag(args, "--duration"),
          });
          const url = flag(args, "--url") ?? `http://APPLIANCE:${config.port}/`;
          console.error(`Added bouncer ${bouncer.name} (${bouncer.mode}, ${bouncer.minimumRisk} and worse${bouncer.categories ? `, ${bouncer.categories.join(",")}` : ""}, ${bouncer.duration}); its key is shown only this once:`);
          console.log(bouncerSnippet(bouncer.mode, url, key));
          return 0;
        }
        case "list": {
          const bouncers = registry.list();
          if (hasSwitch(args, "--json")) console.log(JSON.stringify(bouncers, null, 2));
          else if (bouncers.length === 0) console.error("no bouncers");
          else printColumns([["NAME", "MODE", "RISK", "CATEGORIES", "DURATION", "LAST PULL", "FROM"], ...bouncers.map(row)]);
          return 0;
        }
        case "delete": {
          registry.remove(args.positionals[0]);
          console.log(`Deleted bouncer ${args.positionals[0]}; its key is revoked`);
          return 0;
        }
        default:
          throw new AppError("bad_request", sub === undefined ? `a subcommand is needed\n\n${HELP}` : `unknown subcommand "${sub}"\n\n${HELP}`);
      }
    } finally {
      store.close();
    }
  },
};

const row = (b: BouncerView): string[] => [b.name, b.mode, b.minimumRisk, b.categories?.join(",") ?? "all", b.duration, b.lastPullAt ?? "never", b.lastPullFrom ?? "-"];
