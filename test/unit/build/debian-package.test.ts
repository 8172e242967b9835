// The parts of the Debian package made from the program's own definitions: /etc/default/abuse-intel from OPTIONS,
// the man page from the --help texts, the maintainer scripts for whichever units packaging/systemd holds.

import { describe, expect, test } from "bun:test";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { environmentFile } from "../../../build/debian/environment-file";
import { commandsOfUsage, manPage } from "../../../build/debian/manpage";
import { MAIN_UNIT, MAINTAINER_SCRIPTS, maintainerScript, unitFiles } from "../../../build/package";
import { OPTIONS } from "../../../src/config";

describe("/etc/default/abuse-intel", () => {
  const text = environmentFile();

  test("names every serve option's variable, commented out, after its help", () => {
    for (const option of OPTIONS) {
      const at = text.indexOf(`\n#${option.env}=`);
      expect(at).toBeGreaterThan(0);
      expect(text.slice(0, at)).toContain(`(${option.flag})`);
    }
    expect(text).toContain("\n#ABUSE_INTEL_LOG_FORMAT=\n");
    expect(text).toContain("\n#ABUSE_INTEL_SCHEDULE_RESCORE=\n");
  });

  test("sets nothing: every line is a comment or empty, none longer than 110 characters", () => {
    for (const line of text.split("\n")) {
      expect(line === "" || line.startsWith("#")).toBe(true);
      expect(line.length).toBeLessThanOrEqual(110);
    }
  });
});

describe("the man page", () => {
  const usage = "abuse-intel 1.0: x\n\nCommands:\n  serve        run it\n  doctor       check it\n\n  --version    print the version\n";

  test("lists the commands of the usage, up to the blank line", () => {
    expect(commandsOfUsage(usage)).toEqual([
      { name: "serve", summary: "run it" },
      { name: "doctor", summary: "check it" },
    ]);
  });

  test("keeps help text from being read as roff requests or escapes", () => {
    const page = manPage({ version: "1.0", usage, date: "2026-11-21", commands: [{ name: "serve", summary: "run it", help: ".dot first\n'quote first\nback\\slash --flag" }] });
    expect(page).toContain("\n\\&.dot first\n\\&'quote first\nback\\eslash \\-\\-flag\n");
    expect(page).toStartWith('.TH ABUSE\\-INTEL 1 "2026-11-21" "abuse\\-intel 1.0"');
    const rendered = spawnSync("man", ["-l", "-"], { input: page, encoding: "utf8", env: { ...process.env, MANWIDTH: "100" } });
    if (rendered.error === undefined) expect(rendered.stdout).toContain(".dot first");
  });
});

describe("the units and the maintainer scripts", () => {
  test("the main unit comes first; a firewall-sync unit beside it is shipped but only restarted if running", () => {
    const dir = mkdtempSync(join(tmpdir(), "units-"));
    try {
      for (const unit of ["abuse-intel-firewall-sync.service", MAIN_UNIT, "notes.txt"]) writeFileSync(join(dir, unit), "");
      const units = unitFiles(dir);
      expect(units).toEqual([MAIN_UNIT, "abuse-intel-firewall-sync.service"]);
      const postinst = maintainerScript("postinst", units);
      expect(postinst).toContain("for unit in abuse-intel-firewall-sync.service; do");
      expect(postinst).toContain('UNIT=abuse-intel.service');
      expect(maintainerScript("prerm", units)).toContain("deb-systemd-invoke stop abuse-intel.service abuse-intel-firewall-sync.service");
      expect(maintainerScript("postrm", units)).toContain("deb-systemd-helper purge abuse-intel.service abuse-intel-firewall-sync.service");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.each([[[MAIN_UNIT]], [[MAIN_UNIT, "abuse-intel-firewall-sync.service", "abuse-intel-firewall-sync.timer"]]])(
    "every script is valid POSIX sh with no placeholder left, for units %p",
    (units) => {
      for (const name of MAINTAINER_SCRIPTS) {
        const script = maintainerScript(name, units);
        expect(script).not.toContain("@");
        const check = spawnSync("sh", ["-n"], { input: script, encoding: "utf8" });
        expect(check.stderr).toBe("");
        expect(check.status).toBe(0);
      }
    },
  );

  test("a packaging directory without the main unit is refused", () => {
    const dir = mkdtempSync(join(tmpdir(), "units-"));
    try {
      writeFileSync(join(dir, "other.service"), "");
      expect(() => unitFiles(dir)).toThrow(`packaging/systemd has no ${MAIN_UNIT}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
