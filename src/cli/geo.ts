// `abuse-intel geo lookup|import`: what the enrichment knows of addresses, and newer range CSVs loaded into
// the data directory (contract section 10). A running server picks imported ranges up within 2 seconds.

import { resolveConfig } from "../config";
import { AppError } from "../domain/errors";
import { tryParseIp, type Ip } from "../domain/ip";
import { openEnrichment } from "../services/enrichment/enrichment";
import { formatGeoImportReport, geoLookupLines, importGeoFile } from "../services/enrichment/geo-import";
import { hasSwitch, parseArgs } from "./args";
import { DATA_DIR_HELP, type Command } from "./command";

const HELP = [
  "Usage: abuse-intel geo <lookup|import> [options]",
  "",
  "  geo lookup IP... [--json] [--geo-mmdb FILE]",
  "      Prints country code and name, ASN and ISP (and city when a MaxMind-format database is given).",
  "  geo import FILE",
  "      Loads an ip-location-db range CSV (start,end,country_code or start,end,asn,organization; addresses",
  "      or numbers, IPv4 or IPv6) into <data-dir>/geo/. Newer data wins over the built-in ranges.",
  "",
  DATA_DIR_HELP,
  "  --geo-mmdb FILE        MaxMind-format database adding cities (env ABUSE_INTEL_GEO_MMDB)",
].join("\n");

export const geoCommand: Command = {
  name: "geo",
  summary: "look up or import enrichment data (country, ASN, ISP, city)",
  help: HELP,
  async run(argv) {
    const [sub, ...rest] = argv;
    const args = parseArgs(rest, { values: ["--data-dir", "--geo-mmdb"], switches: ["--json"] });
    const config = resolveConfig(args.flags);
    if (sub === "lookup") {
      if (args.positionals.length === 0) throw new AppError("bad_request", "geo lookup takes one or more addresses");
      const ips: Ip[] = args.positionals.map((text) => {
        const ip = tryParseIp(text);
        if (typeof ip === "string") throw new AppError("bad_request", `"${text}" is not an IP address: ${ip}`);
        return ip;
      });
      const enrichment = await openEnrichment({ dataDir: config.dataDir, mmdbPath: config.geoMmdb });
      if (hasSwitch(args, "--json")) for (const ip of ips) console.log(JSON.stringify({ ip: ip.text, ...enrichment.lookup(ip) }));
      else for (const line of geoLookupLines(enrichment, ips)) console.log(line);
      return 0;
    }
    if (sub === "import") {
      if (args.positionals.length !== 1) throw new AppError("bad_request", "geo import takes one CSV file");
      const result = await importGeoFile(args.positionals[0], { dataDir: config.dataDir });
      for (const line of formatGeoImportReport(result)) console.log(line);
      return result.rowCount > 0 ? 0 : 1;
    }
    throw new AppError("bad_request", `geo takes lookup or import\n\n${HELP}`);
  },
};
