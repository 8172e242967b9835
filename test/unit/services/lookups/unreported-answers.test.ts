// Answers of never-reported addresses made from a template (unreported-answers.ts): the same JSON as the data
// object they stand for, `cached` false on the first ask and true after, false again once the address changed.

import { describe, expect, test } from "bun:test";
import { parseIp } from "../../../../src/domain/ip";
import { UnreportedAnswers, type UnreportedGeo } from "../../../../src/services/lookups/unreported-answers";

const dataOf = (geo: UnreportedGeo) => ({
  ipAddress: "",
  reputationScore: 100,
  riskLevel: "LOW",
  totalReports: 0,
  verifiedReports: 0,
  categories: [],
  country: geo.countryCode,
  isp: geo.isp,
  cached: false,
});

describe("UnreportedAnswers", () => {
  test("an answer is the data object byte for byte as JSON.stringify writes it", () => {
    const answers = new UnreportedAnswers(dataOf);
    const geos: UnreportedGeo[] = [
      { countryCode: "US", isp: "Google LLC" },
      { countryCode: null, isp: null },
      { countryCode: "DE", isp: 'Quote "and" backslash \\ and ünïcödé' },
    ];
    for (const text of ["203.0.113.9", "2001:db8::1", "8.8.8.8"]) {
      for (const geo of geos) {
        const ip = parseIp(text);
        expect(answers.dataText(ip, geo)).toBe(JSON.stringify({ ...dataOf(geo), ipAddress: text, cached: false }));
        expect(answers.askedBefore).toBe(false);
        expect(answers.dataText(ip, geo)).toBe(JSON.stringify({ ...dataOf(geo), ipAddress: text, cached: true }));
        expect(answers.askedBefore).toBe(true);
        answers.forget(ip);
      }
    }
  });

  test("cached follows the address, however it is spelled; forget and clear start it over", () => {
    const answers = new UnreportedAnswers(dataOf);
    const geo = { countryCode: "FR", isp: "Orange" };
    const cached = (text: string) => JSON.parse(answers.dataText(parseIp(text), geo)).cached;
    expect(cached("192.0.2.1")).toBe(false);
    expect(cached("192.0.2.1")).toBe(true);
    expect(cached("2001:DB8:0::5")).toBe(false);
    expect(cached("2001:db8::5")).toBe(true);
    answers.forget(parseIp("192.0.2.1"));
    expect(cached("192.0.2.1")).toBe(false);
    expect(cached("2001:db8::5")).toBe(true);
    answers.clear();
    expect(cached("2001:db8::5")).toBe(false);
  });

  test("many different owners: every answer still carries its own", () => {
    const answers = new UnreportedAnswers(dataOf);
    const ip = parseIp("198.51.100.7");
    for (let i = 0; i < 60_000; i++) {
      const isp = `Owner ${i % 55_000}`;
      expect(answers.dataText(ip, { countryCode: "NL", isp }).includes(`"isp":"${isp}"`)).toBe(true);
    }
  });
});
