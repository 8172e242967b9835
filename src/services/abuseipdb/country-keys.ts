// Country codes as small numbers, so that the blacklist keeps one per entry in a Uint16Array and its country
// filters are one table read per entry: a code is its two letters' character codes (`US` = 0x5553).

export type CountryKey = number;
/** An address whose country is unknown. */
export const NO_COUNTRY: CountryKey = 1;

export const countryKey = (code: string | null): CountryKey => (code === null ? NO_COUNTRY : (code.charCodeAt(0) << 8) | code.charCodeAt(1));

/**
 * Which countries `onlyCountries` and `exceptCountries` let through, by key (1: listed), or null when neither is
 * given. Only: the country is one of them (an unknown country is not); except: it is none of them (an unknown
 * country is listed).
 */
export function countryFilter(only: ReadonlySet<string> | null, except: ReadonlySet<string> | null): Uint8Array | null {
  if (only === null && except === null) return null;
  const listed = new Uint8Array(65536);
  if (only === null) listed.fill(1);
  else for (const code of only) listed[countryKey(code)] = 1;
  if (except !== null) for (const code of except) listed[countryKey(code)] = 0;
  return listed;
}
