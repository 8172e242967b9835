// `npm run package`: the Debian package build/out/abuse-intel_<version>_<arch>.deb, made with dpkg-deb alone from
// the built executable (npm run build first) and packaging/: the unit(s), the maintainer scripts, the copyright.
// Options: --version V (the upstream version, default package.json's; the upgrade test builds a higher one),
// --revision N (the Debian revision, default 1: the package version is V-N), --out DIR, --compress gzip|xz|zstd
// (default gzip: xz takes minutes for the 120 MB executable on a small machine).

import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { gzipSync } from "node:zlib";
import pkg from "../package.json" with { type: "json" };
import { environmentFile } from "./debian/environment-file";
import { commandsOfUsage, manPage } from "./debian/manpage";

const root = join(import.meta.dir, "..");
const BINARY = join(root, "build/out/abuse-intel");
const PACKAGING = join(root, "packaging");
/** The unit enabled and started on installation; the others (firewall sync) are shipped for the operator to enable. */
export const MAIN_UNIT = "abuse-intel.service";
const MAINTAINER = process.env.DEB_MAINTAINER ?? "abuse-intel maintainers <abuse-intel@example.org>";

function run(command: string, args: string[], input?: string): string {
  const result = spawnSync(command, args, { encoding: "utf8", input, maxBuffer: 64 * 1024 * 1024 });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status}): ${result.stderr}`);
  return result.stdout;
}

function option(name: string): string | undefined {
  const i = process.argv.indexOf(name);
  if (i < 0) return undefined;
  const value = process.argv[i + 1];
  if (value === undefined || value.startsWith("--")) throw new Error(`${name} needs a value`);
  return value;
}

/** The systemd units shipped: every .service and .timer in packaging/systemd, the main one first. */
export function unitFiles(dir = join(PACKAGING, "systemd")): string[] {
  const units = readdirSync(dir).filter((f) => /\.(service|timer)$/.test(f)).sort();
  if (!units.includes(MAIN_UNIT)) throw new Error(`packaging/systemd has no ${MAIN_UNIT}`);
  return [MAIN_UNIT, ...units.filter((u) => u !== MAIN_UNIT)];
}

export const MAINTAINER_SCRIPTS = ["postinst", "prerm", "postrm"];

/** A maintainer script of packaging/debian for these units: @UNITS@ names them all, @OTHER_UNITS@ all but the main one. */
export function maintainerScript(name: string, units: string[]): string {
  const others = units.filter((u) => u !== MAIN_UNIT);
  return readFileSync(join(PACKAGING, "debian", name), "utf8").replaceAll("@UNITS@", units.join(" ")).replaceAll("@OTHER_UNITS@", others.join(" "));
}

/** An RFC 2822 date for the changelog: SOURCE_DATE_EPOCH, else the last commit's time, so builds are reproducible. */
function changelogDate(): Date {
  const epoch = process.env.SOURCE_DATE_EPOCH ?? spawnSync("git", ["log", "-1", "--format=%ct"], { cwd: root, encoding: "utf8" }).stdout?.trim();
  const seconds = Number(epoch);
  return Number.isFinite(seconds) && seconds > 0 ? new Date(seconds * 1000) : new Date();
}

function rfc2822(date: Date): string {
  return date.toUTCString().replace("GMT", "+0000");
}

/** The production npm packages compiled into the executable (dependencies, transitively), with their licences. */
function bundledPackages(): string[] {
  const seen = new Map<string, string>();
  const visit = (name: string, from: string) => {
    if (seen.has(name)) return;
    let dir = from;
    let manifest: string | null = null;
    while (manifest === null) {
      const candidate = join(dir, "node_modules", name, "package.json");
      if (existsSync(candidate)) manifest = candidate;
      else if (dir === root || dir === dirname(dir)) return; // an optional dependency not installed
      else dir = dirname(dir);
    }
    const meta = JSON.parse(readFileSync(manifest, "utf8"));
    seen.set(name, `${name} ${meta.version}, ${meta.license ?? "see the package"}`);
    for (const dep of Object.keys(meta.dependencies ?? {})) visit(dep, dirname(manifest));
  };
  for (const dep of Object.keys(pkg.dependencies)) visit(dep, root);
  return [...seen.values()].sort();
}

function installedVersion(name: string): string {
  return JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
}

function writeFile(path: string, content: string | Uint8Array, mode = 0o644): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o755 });
  writeFileSync(path, content);
  chmodSync(path, mode);
}

/** gzip -9n: maximum compression and no name or time in the header, as Debian policy asks for docs and man pages. */
const gzip9 = (text: string) => gzipSync(Buffer.from(text), { level: 9 });

/** The help texts of the executable, read from the executable itself. */
function helpTexts(binary: string, date: Date) {
  const usage = run(binary, ["--help"]);
  const commands = commandsOfUsage(usage).map((c) => ({ ...c, help: run(binary, [c.name, "--help"]) }));
  if (commands.length === 0) throw new Error(`${binary} --help lists no commands`);
  return { version: run(binary, ["--version"]).trim(), usage, commands, date: date.toISOString().slice(0, 10) };
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

/** Builds the package; `version` is the Debian version (upstream-revision). Returns the .deb's path. */
export function buildPackage(options: { version: string; outDir: string; compress: string; binary: string }): string {
  const arch = run("dpkg", ["--print-architecture"]).trim();
  if (!existsSync(options.binary)) throw new Error(`${relative(root, options.binary)} is missing: run \`npm run build\` first`);
  const units = unitFiles();
  const date = changelogDate();
  const stage = mkdtempSync(join(tmpdir(), "abuse-intel-deb-"));
  try {
    const doc = join(stage, "usr/share/doc/abuse-intel");
    mkdirSync(join(stage, "usr/bin"), { recursive: true, mode: 0o755 });
    copyFileSync(options.binary, join(stage, "usr/bin/abuse-intel"));
    chmodSync(join(stage, "usr/bin/abuse-intel"), 0o755);
    for (const unit of units) writeFile(join(stage, "lib/systemd/system", unit), readFileSync(join(PACKAGING, "systemd", unit), "utf8"));
    writeFile(join(stage, "etc/default/abuse-intel"), environmentFile());
    const copyright = readFileSync(join(PACKAGING, "debian/copyright"), "utf8")
      .replace("@BUNDLED@", bundledPackages().map((line) => ` ${line}`).join("\n"))
      .replace("@GEO_VERSION@", installedVersion("@ip-location-db/geo-whois-asn-country"))
      .replace("@ASN_VERSION@", installedVersion("@ip-location-db/asn"));
    writeFile(join(doc, "copyright"), copyright);
    const changelog = [
      `abuse-intel (${options.version}) unstable; urgency=medium`,
      "",
      `  * abuse-intel ${options.version.replace(/-[^-]+$/, "")}, packaged with dpkg-deb by build/package.ts.`,
      "",
      ` -- ${MAINTAINER}  ${rfc2822(date)}`,
      "",
    ].join("\n");
    writeFile(join(doc, "changelog.Debian.gz"), gzip9(changelog));
    writeFile(join(stage, "usr/share/man/man1/abuse-intel.1.gz"), gzip9(manPage(helpTexts(options.binary, date))));
    writeFile(join(stage, "usr/share/lintian/overrides/abuse-intel"), readFileSync(join(PACKAGING, "debian/lintian-overrides"), "utf8"));

    const files = listFiles(stage);
    const installedKb = Math.ceil(files.reduce((sum, f) => sum + statSync(f).size, 0) / 1024);
    const md5sums = files
      .map((f) => `${createHash("md5").update(readFileSync(f)).digest("hex")}  ${relative(stage, f)}`)
      .sort((a, b) => a.slice(34).localeCompare(b.slice(34)))
      .join("\n");
    for (const name of MAINTAINER_SCRIPTS) writeFile(join(stage, "DEBIAN", name), maintainerScript(name, units), 0o755);
    writeFile(join(stage, "DEBIAN/conffiles"), "/etc/default/abuse-intel\n");
    writeFile(join(stage, "DEBIAN/md5sums"), `${md5sums}\n`);
    writeFile(
      join(stage, "DEBIAN/control"),
      [
        "Package: abuse-intel",
        `Version: ${options.version}`,
        `Architecture: ${arch}`,
        `Maintainer: ${MAINTAINER}`,
        `Installed-Size: ${installedKb}`,
        "Depends: libc6 (>= 2.17), adduser",
        "Recommends: systemd",
        "Section: net",
        "Priority: optional",
        "Description: abuse-intelligence IP reputation service",
        " abuse-intel keeps a shared database of abusive IPv4 and IPv6 addresses that",
        " clients look up, report to and download as firewall blocklists (nftables,",
        " ipset, CrowdSec bouncers, a DNS blocklist for mail servers). The HTTP API,",
        " the scheduled jobs and the command-line tools are one executable.",
        " .",
        " This package runs it as the hardened systemd service abuse-intel.service",
        " under its own system user, with its data in /var/lib/abuse-intel.",
        "",
      ].join("\n"),
    );
    mkdirSync(options.outDir, { recursive: true });
    const out = join(options.outDir, `abuse-intel_${options.version}_${arch}.deb`);
    run("dpkg-deb", ["--root-owner-group", `-Z${options.compress}`, "--build", stage, out]);
    return out;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  try {
    const started = performance.now();
    const out = buildPackage({
      version: `${option("--version") ?? pkg.version}-${option("--revision") ?? "1"}`,
      outDir: option("--out") ?? join(root, "build/out"),
      compress: option("--compress") ?? "gzip",
      binary: option("--binary") ?? BINARY,
    });
    const megabytes = (statSync(out).size / 1024 / 1024).toFixed(1);
    console.log(`package: ${relative(process.cwd(), out)}, ${megabytes} MB, in ${Math.round(performance.now() - started)} ms`);
  } catch (error) {
    console.error(`package: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  }
}
