// Answers of never-reported addresses made from a template (unreported-answers.ts): the same JSON as the data
// object they stand for, `cached` false on the first ask and true after, false again once the address changed.

import { describe, expect, test } from "bun:test";
import { parseIp, type Ip } from "../../../../src/domain/ip";
import { ByteScratch } from "../../../../src/services/lookups/byte-scratch";
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

/** The answer's data text as written, and whether the address had been asked before, as `write` returns it. */
function answer(answers: UnreportedAnswers, ip: Ip, geo: UnreportedGeo | number, out = new ByteScratch()): [string, boolean] {
  const start = out.at;
  const askedBefore = answers.write(ip, geo, out);
  return [new TextDecoder().decode(out.view(start, out.at)), askedBefore];
}

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
        expect(answer(answers, ip, geo)).toEqual([JSON.stringify({ ...dataOf(geo), ipAddress: text, cached: false }), false]);
        expect(answer(answers, ip, geo)).toEqual([JSON.stringify({ ...dataOf(geo), ipAddress: text, cached: true }), true]);
        answers.forget(ip);
      }
    }
  });

  test("cached follows the address, however it is spelled; forget and clear start it over", () => {
    const answers = new UnreportedAnswers(dataOf);
    const geo = { countryCode: "FR", isp: "Orange" };
    const cached = (text: string) => JSON.parse(answer(answers, parseIp(text), geo)[0]).cached;
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
      expect(answer(answers, ip, { countryCode: "NL", isp })[0].includes(`"isp":"${isp}"`)).toBe(true);
    }
  });

  test("by pair id: each pair's tail is made once, from its geo, and answers match those by text", () => {
    const geos: UnreportedGeo[] = Array.from({ length: 3_000 }, (_, i) => ({ countryCode: i % 7 === 0 ? null : "SE", isp: `Ägare ${i} "AB"` }));
    const made: number[] = [];
    const byId = new UnreportedAnswers(dataOf, (id) => (made.push(id), geos[id]!));
    const byText = new UnreportedAnswers(dataOf);
    // One scratch for many answers, as a bulk check writes them: each stays where it was written.
    const out = new ByteScratch();
    const written: [number, number, string][] = [];
    for (let round = 0; round < 2; round++) {
      for (let id = geos.length - 1; id >= 0; id -= 1 + (id % 3)) {
        const ip = parseIp(`10.${round}.${id >> 8}.${id & 255}`);
        const start = out.at;
        const [text] = answer(byId, ip, id, out);
        written.push([start, out.at, text]);
        expect(text).toBe(answer(byText, ip, geos[id]!)[0]);
      }
    }
    expect(made.length).toBe(new Set(made).size);
    for (const [start, end, text] of written) expect(new TextDecoder().decode(out.view(start, end))).toBe(text);
  });
});
