import { describe, expect, test } from "bun:test";
import { countryName, isKnownCountryCode, knownCountryCodes } from "../../../src/domain/countries";

describe("country names", () => {
  test.each([
    ["US", "United States"],
    ["us", "United States"],
    ["GB", "United Kingdom"],
    ["DE", "Germany"],
    ["XK", "Kosovo"],
    ["HK", "Hong Kong"],
    ["CI", "Ivory Coast"],
    ["AN", "Netherlands Antilles"],
    ["ZZ", null],
    ["QQ", null],
    ["EU", null],
    ["UK", null],
    ["", null],
    ["USA", null],
    [null, null],
    [undefined, null],
  ])("%p → %p", (code, name) => {
    expect(countryName(code)).toBe(name);
  });

  test("every code of the packaged data has a name", async () => {
    // The codes that occur in @ip-location-db/geo-whois-asn-country (v4 and v6), read from the package itself.
    const dir = `${import.meta.dir}/../../../node_modules/@ip-location-db/geo-whois-asn-country`;
    const codes = new Set<string>();
    for (const f of ["geo-whois-asn-country-ipv4-num.csv", "geo-whois-asn-country-ipv6-num.csv"]) {
      for (const line of (await Bun.file(`${dir}/${f}`).text()).split("\n")) if (line) codes.add(line.slice(line.lastIndexOf(",") + 1));
    }
    expect([...codes].filter((c) => !isKnownCountryCode(c))).toEqual([]);
  });

  test("the table holds the 249 ISO 3166-1 codes plus XK and AN", () => {
    expect(knownCountryCodes().length).toBe(251);
  });
});
