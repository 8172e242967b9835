import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { parseIp } from "../../../src/domain/ip";
import { DAY_MS } from "../../../src/domain/scoring";
import { ThreatService } from "../../../src/services/threats/threats";
import { bodyOf } from "../../support/harness";
import { createJobsFixture, HOUR, type JobsFixture, MINUTE } from "./jobs-fixture";

let f: JobsFixture;
beforeEach(async () => {
  f = await createJobsFixture();
  f.subscribe(["threat.detected"]);
});
afterEach(() => f.close());

/** `count` addresses `prefix.first`, `prefix.first+1`, … reported `stepMs` apart. */
async function burst(prefix: string, first: number, count = 5, stepMs = 10 * MINUTE, json: Record<string, unknown> = {}) {
  for (let i = 0; i < count; i++) {
    if (i > 0) f.h.clock.advance(stepMs);
    await f.report(`${prefix}.${first + i}`, json);
  }
}

const threats = async () => (await bodyOf(await f.h.call("GET", "/v1/threats", { headers: f.reporters[0].apiKey }))).data;

describe("detect-threats: subnet_burst", () => {
  test("5 addresses of one /24 within 60 minutes: one threat.detected, not again within 24 h, again after 24 h if it recurs", async () => {
    await burst("203.0.113", 1); // 40 minutes from the first report to the fifth
    const first = await f.run("detect-threats");
    expect(first.lastResult).toEqual({ reports: 5, patterns: 1, detected: 1, suppressed: 0, threatIds: ["1"], dropped: 0 });
    const detectedAt = f.h.clock.now();

    const events = await f.delivered();
    expect(events).toEqual([
      {
        event: "threat.detected",
        timestamp: new Date(detectedAt).toISOString(),
        // Severity 5, one report each: score 51, abuse_confidence 49.
        data: { ip: "203.0.113.0/24", category: "brute_force", confidence: 49, reporter_id: null, kind: "subnet_burst", threatId: "1", ipCount: 5 },
      },
    ]);
    expect(f.receiver.requests[0].headers.get("x-webhook-event")).toBe("threat.detected");

    // The next run has no new report: it looks at no group again and stays quiet.
    f.h.clock.advance(MINUTE);
    expect((await f.run("detect-threats")).lastResult).toEqual({ reports: 5, patterns: 0, detected: 0, suppressed: 0, threatIds: [], dropped: 0 });
    // One more report in the subnet: the burst is seen again, and suppressed.
    await f.report("203.0.113.6");
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 6, patterns: 1, detected: 0, suppressed: 1 });
    // A new burst in the same /24 within 24 hours of the detection: still quiet.
    f.h.clock.set(detectedAt + 22 * HOUR);
    await burst("203.0.113", 11);
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ detected: 0, suppressed: 1 });
    expect(await f.delivered()).toHaveLength(1);

    // More than 24 hours after the detection the burst recurs: announced again.
    f.h.clock.set(detectedAt + DAY_MS + MINUTE);
    await burst("203.0.113", 21);
    const again = await f.run("detect-threats");
    expect(again.lastResult).toMatchObject({ detected: 1, threatIds: ["2"] });
    const all = await f.delivered();
    expect(all).toHaveLength(2);
    expect(all[1].data).toMatchObject({ ip: "203.0.113.0/24", kind: "subnet_burst", threatId: "2" });
    expect(new Set(f.receiver.requests.map((r) => r.headers.get("x-webhook-delivery"))).size).toBe(2);

    // Both are listed, newest first.
    const listed = await threats();
    expect(listed.map((t: { id: string }) => t.id)).toEqual(["2", "1"]);
    expect(listed[1]).toEqual({
      id: "1",
      kind: "subnet_burst",
      cidr: "203.0.113.0/24",
      asn: null,
      category: "BRUTE_FORCE",
      ipCount: 5,
      addresses: ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4", "203.0.113.5"],
      windowStart: new Date(detectedAt - 40 * MINUTE).toISOString(),
      windowEnd: new Date(detectedAt).toISOString(),
      detectedAt: new Date(detectedAt).toISOString(),
    });
  });

  test("4 addresses, or 5 spread over more than 60 minutes, are no burst", async () => {
    await burst("203.0.113", 1, 4);
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ patterns: 0, detected: 0 });
    f.h.clock.advance(31 * MINUTE); // the fifth comes 61 minutes after the first (reports at 0, 10, 20, 30)
    await f.report("203.0.113.5");
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ patterns: 0, detected: 0 });
    expect(await f.delivered()).toEqual([]);
  });

  test("IPv6: 5 addresses of one /64", async () => {
    for (let i = 1; i <= 5; i++) await f.report(`2001:db8:7:8::${i}`, { category: "port-scan" });
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ detected: 1 });
    expect((await f.delivered())[0].data).toMatchObject({ ip: "2001:db8:7:8::/64", category: "port_scan", ipCount: 5 });
  });
});

describe("detect-threats: category_campaign", () => {
  // 20 addresses of AS15169 (Google LLC) in the embedded enrichment data, at most 4 per /24 so no subnet burst.
  const GOOGLE = ["8.8.8", "8.8.4", "142.250.0", "172.217.0", "216.58.192"].flatMap((net) => [1, 2, 3, 4].map((host) => `${net}.${host}`));

  test("one category against 20 addresses of one ASN within 60 minutes: one threat.detected with the ASN", async () => {
    for (const ip of GOOGLE) expect(f.h.services.enrichment.lookup(parseIp(ip))).toMatchObject({ asn: 15169, isp: "Google LLC" });
    for (const ip of GOOGLE.slice(0, 19)) {
      await f.report(ip, { category: "ssh", severity: 3 });
      f.h.clock.advance(3 * MINUTE);
    }
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ patterns: 0 });
    await f.report(GOOGLE[19], { category: "ssh", severity: 3 });

    expect((await f.run("detect-threats")).lastResult).toMatchObject({ patterns: 1, detected: 1 });
    const [event] = await f.delivered();
    // Severity 3, one report each: score round(100 × e^(−0.6/1.5)) = 67 for the newest; older ones have decayed
    // by minutes only, so the highest confidence is 33.
    expect(event.data).toEqual({
      ip: "8.8.0.0/16", // the covering network (0.0.0.0/0) is too wide: the /16 holding most of them
      category: "ssh",
      confidence: 33,
      reporter_id: null,
      kind: "category_campaign",
      threatId: "1",
      ipCount: 20,
      asn: 15169,
    });
    const [listed] = await threats();
    expect(listed).toMatchObject({ kind: "category_campaign", asn: 15169, category: "SSH", ipCount: 20 });
    expect(listed.addresses).toHaveLength(20);

    // Another report of the campaign: seen again, and suppressed.
    f.h.clock.advance(MINUTE);
    await f.report(GOOGLE[0], { category: "ssh", severity: 3 });
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ detected: 0, suppressed: 1 });
  });

});

// After its first run the job keeps the window's reports and reads only what was stored (or dated) since.
describe("detect-threats: the reports kept between runs", () => {
  test("reports deleted by clear-address leave the window: they make no burst with a new report", async () => {
    for (let i = 1; i <= 4; i++) {
      await f.report(`203.0.113.${i}`);
      f.h.clock.advance(MINUTE);
    }
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 4, patterns: 0 });
    for (let i = 1; i <= 4; i++) {
      const res = await f.h.call("DELETE", `/api/v2/clear-address?ipAddress=203.0.113.${i}`, { headers: { key: f.reporters[0].key } });
      expect((await bodyOf(res)).data.numReportsDeleted).toBe(1);
    }
    // One address of the subnet has a report now: no burst (the four deleted ones made one of five).
    await f.report("203.0.113.5");
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 1, patterns: 0, detected: 0 });
    // A clear-address that deletes nothing changes nothing; a burst of reports that exist still forms.
    expect((await bodyOf(await f.h.call("DELETE", "/api/v2/clear-address?ipAddress=192.0.2.1", { headers: { key: f.reporters[0].key } }))).data.numReportsDeleted).toBe(0);
    for (let i = 6; i <= 9; i++) await f.report(`203.0.113.${i}`);
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 5, patterns: 1, detected: 1 });
  });

  test("a report rejected after a run leaves the window", async () => {
    await burst("203.0.113", 1, 4, MINUTE);
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 4, patterns: 0 });
    f.h.store.sqlite.run("UPDATE reports SET status = 'rejected' WHERE ip = '203.0.113.2'");
    await f.report("203.0.113.5");
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 4, patterns: 0 });
    await f.report("203.0.113.6");
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 5, patterns: 1, detected: 1 });
  });

  test("a report stored by another process with an earlier date (an import) joins the window", async () => {
    await burst("203.0.113", 1, 4, MINUTE);
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 4, patterns: 0 });
    const at = f.h.clock.now() - 10 * MINUTE;
    f.h.store.sqlite
      .query(
        `INSERT INTO reports (ip, ip_version, reporter_id, category, severity, description, status, source, created_at, status_changed_at)
         VALUES ('203.0.113.9', 4, ?, 'BRUTE_FORCE', 5, '', 'pending', 'import', ?, ?)`,
      )
      .run(f.reporters[0].user.id, at, at);
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 5, patterns: 1, detected: 1 });
  });

  test("reports dated after a pass's time count at the next pass; a pass for an earlier time reads everything", async () => {
    await burst("203.0.113", 1, 5, MINUTE);
    const end = f.h.clock.now();
    // A pass for an hour earlier (a CLI run with its own clock, say) has none of them in its window...
    expect(await f.h.services.threats.detect(end - 2 * HOUR)).toMatchObject({ reports: 0, patterns: 0 });
    // ...the next pass, with nothing stored since, finds the burst...
    expect(await f.h.services.threats.detect(end)).toMatchObject({ reports: 5, patterns: 1, detected: 1 });
    // ...and a pass for an earlier time than that reads the window again and sees it (suppressed).
    expect(await f.h.services.threats.detect(end - MINUTE)).toMatchObject({ reports: 4, patterns: 0 });
    expect(await f.h.services.threats.detect(end)).toMatchObject({ reports: 5, patterns: 1, suppressed: 1 });
  });

  test("rejected reports do not count", async () => {
    await burst("203.0.113", 1, 5, MINUTE);
    f.h.store.sqlite.run("UPDATE reports SET status = 'rejected' WHERE ip = '203.0.113.5'");
    expect((await f.run("detect-threats")).lastResult).toMatchObject({ reports: 4, patterns: 0 });
  });
});

describe("detect-threats: a pass in chunks", () => {
  test("read three reports at a time, a pass finds what one read finds, and lets the event loop turn between chunks", async () => {
    // Two bursts (10 reports) and reports elsewhere, four of them at the same millisecond (a chunk ends between
    // reports of one time), then more after the first pass.
    await burst("203.0.113", 1, 5, MINUTE);
    await burst("198.51.100", 1, 5, MINUTE);
    await burst("192.0.2", 1, 4, 0);
    const chunked = new ThreatService({
      store: f.h.store,
      clock: f.h.clock,
      asnOf: (ip) => f.h.services.enrichment.lookup(ip).asn,
      thresholds: f.h.services.threats.thresholds,
      detectChunk: 3,
    });
    const whole = async (svc: ThreatService, now: number) => {
      let turned = false;
      setImmediate(() => (turned = true));
      const summary = await svc.detect(now);
      return { summary: { reports: summary.reports, patterns: summary.patterns }, turned };
    };
    const now = f.h.clock.now();
    // The first pass reads the whole window, 14 reports in five chunks; the default chunk reads them in one.
    expect(await whole(chunked, now)).toEqual({ summary: { reports: 14, patterns: 2 }, turned: true });
    expect(await whole(f.h.services.threats, now)).toEqual({ summary: { reports: 14, patterns: 2 }, turned: false });
    // A later pass reads only what was stored since, in chunks too (its patterns: the groups with new reports).
    f.h.clock.advance(MINUTE);
    await burst("192.0.2", 5, 4, 0);
    const later = f.h.clock.now();
    expect(await whole(chunked, later)).toEqual({ summary: { reports: 18, patterns: 1 }, turned: true });
    expect(await whole(f.h.services.threats, later)).toEqual({ summary: { reports: 18, patterns: 1 }, turned: false });
  });
});

describe("detect-threats: the window's limit", () => {
  test("over --threat-window-reports, the oldest reports leave the window first: a burst among them is missed, a newer one found", async () => {
    const limited = await createJobsFixture(1, { threatWindowReports: 10 });
    try {
      // A burst (5 addresses of 203.0.113.0/24), then 8 reports in other /24s: 13 reports for a window of 10.
      for (let i = 1; i <= 5; i++) await limited.report(`203.0.113.${i}`);
      for (let i = 1; i <= 8; i++) await limited.report(`45.${i}.0.1`);
      // Past its limit the window is cut to nine tenths of it (9): the burst's first four reports leave.
      expect((await limited.run("detect-threats")).lastResult).toEqual({ reports: 9, patterns: 0, detected: 0, suppressed: 0, threatIds: [], dropped: 4 });
      // A second burst: 14 reports, cut to 9 again (the first burst's last report and four others leave).
      limited.h.clock.advance(MINUTE);
      for (let i = 1; i <= 5; i++) await limited.report(`198.51.100.${i}`);
      const second = await limited.run("detect-threats");
      expect(second.lastResult).toMatchObject({ reports: 9, patterns: 1, detected: 1, dropped: 5 });
      const listed = (await bodyOf(await limited.h.call("GET", "/v1/threats", { headers: limited.reporters[0].apiKey }))).data;
      expect(listed.map((t: { cidr: string }) => t.cidr)).toEqual(["198.51.100.0/24"]);
    } finally {
      await limited.close();
    }
  });

  test("over the limit, the reports the window slid past go first: none of the new ones leave early", async () => {
    const limited = await createJobsFixture(1, { threatWindowReports: 10 });
    try {
      for (let i = 1; i <= 8; i++) await limited.report(`45.${i}.0.1`);
      expect((await limited.run("detect-threats")).lastResult).toMatchObject({ reports: 8, dropped: 0 });
      // 75 minutes on, those eight are past the window (60 minutes and the 10-minute slack); a burst of five comes.
      limited.h.clock.advance(75 * MINUTE);
      for (let i = 1; i <= 5; i++) await limited.report(`198.51.100.${i}`);
      expect((await limited.run("detect-threats")).lastResult).toMatchObject({ reports: 5, patterns: 1, detected: 1, dropped: 0 });
    } finally {
      await limited.close();
    }
  });

  test("the default holds 500,000 reports, and the option refuses what is not a count of at least 1000", async () => {
    const { defaultConfig, resolveConfig } = await import("../../../src/config");
    expect(defaultConfig().threatWindowReports).toBe(500_000);
    expect(resolveConfig(new Map([["--threat-window-reports", ["20000"]]])).threatWindowReports).toBe(20_000);
    expect(resolveConfig(new Map(), { ABUSE_INTEL_THREAT_WINDOW_REPORTS: "3000" }).threatWindowReports).toBe(3000);
    for (const bad of ["999", "1e6", "-5", "lots"]) {
      expect(() => resolveConfig(new Map([["--threat-window-reports", [bad]]]))).toThrow(/--threat-window-reports must be a whole number of reports from 1000/);
    }
  });
});
