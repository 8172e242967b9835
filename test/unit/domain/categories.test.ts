import { describe, expect, test } from "bun:test";
import {
  ABUSEIPDB_CATEGORIES,
  type Category,
  ALL_CATEGORIES_MASK,
  CATEGORIES,
  CATEGORY_INFO,
  abuseIpdbNumberOf,
  categoriesFromMask,
  categoryAt,
  categoryBit,
  categoryFromAbuseIpdb,
  isCategory,
  lowercaseCategory,
  maskIntersects,
  maskOf,
  nearestAbuseIpdbNumber,
  parseCategory,
  parseCategoryList,
  tryParseCategory,
  tryParseCategoryOrAbuseIpdbNumber,
} from "../../../src/domain/categories";
import { AppError } from "../../../src/domain/errors";

const CONTRACT_ORDER: Category[] = [
  "SPAM", "BRUTE_FORCE", "PORT_SCAN", "PHISHING", "MALWARE", "DDOS", "SQL_INJECTION", "EXPLOIT",
  "WEB_ATTACK", "BAD_BOT", "OPEN_PROXY", "FRAUD", "SSH", "IOT", "SPOOFING", "HACKING",
];

function thrown(fn: () => unknown): AppError {
  try {
    fn();
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error("expected an AppError");
}

describe("the category list", () => {
  test("holds the 16 categories in the contract's order, each with a description and its bit", () => {
    expect([...CATEGORIES]).toEqual(CONTRACT_ORDER);
    expect(CATEGORY_INFO.map((c) => c.name)).toEqual(CONTRACT_ORDER);
    CATEGORY_INFO.forEach((info, i) => {
      expect(info.bit).toBe(i);
      expect(info.description.length).toBeGreaterThan(10);
    });
  });

  test.each([
    ["SPAM", 11], ["BRUTE_FORCE", 18], ["PORT_SCAN", 14], ["PHISHING", 7], ["MALWARE", null], ["DDOS", 4],
    ["SQL_INJECTION", 16], ["EXPLOIT", 20], ["WEB_ATTACK", 21], ["BAD_BOT", 19], ["OPEN_PROXY", 9], ["FRAUD", 3],
    ["SSH", 22], ["IOT", 23], ["SPOOFING", 17], ["HACKING", 15],
  ] as const)("%s has AbuseIPDB number %p", (name, number) => {
    expect(abuseIpdbNumberOf(name)).toBe(number);
    expect(CATEGORY_INFO[categoryBit(name)].abuseIpdbNumber).toBe(number);
    expect(nearestAbuseIpdbNumber(name)).toBe(number ?? 20);
  });

  test("each category's own AbuseIPDB number maps back to it", () => {
    for (const c of CATEGORIES) {
      const n = abuseIpdbNumberOf(c);
      if (n !== null) expect(categoryFromAbuseIpdb(n)).toBe(c);
    }
  });
});

describe("AbuseIPDB numbers", () => {
  test.each([
    [1, "HACKING"], [2, "SPOOFING"], [3, "FRAUD"], [4, "DDOS"], [5, "BRUTE_FORCE"], [6, "DDOS"], [7, "PHISHING"],
    [8, "FRAUD"], [9, "OPEN_PROXY"], [10, "SPAM"], [11, "SPAM"], [12, "SPAM"], [13, "OPEN_PROXY"], [14, "PORT_SCAN"],
    [15, "HACKING"], [16, "SQL_INJECTION"], [17, "SPOOFING"], [18, "BRUTE_FORCE"], [19, "BAD_BOT"], [20, "EXPLOIT"],
    [21, "WEB_ATTACK"], [22, "SSH"], [23, "IOT"],
  ] as const)("%i maps to %s", (number, category) => {
    expect(categoryFromAbuseIpdb(number)).toBe(category);
    expect(ABUSEIPDB_CATEGORIES[number - 1].number).toBe(number);
  });

  test.each([0, 24, -1, 1.5, Number.NaN])("%p is not an AbuseIPDB category", (n) => {
    expect(categoryFromAbuseIpdb(n)).toBeNull();
  });

  test.each([
    ["18", "BRUTE_FORCE"], [" 22 ", "SSH"], ["ssh", "SSH"], ["brute-force", "BRUTE_FORCE"], ["24", null], ["0", null],
    ["x1", null], ["", null],
  ] as const)("import item %p reads as %p", (input, expected) => {
    expect(tryParseCategoryOrAbuseIpdbNumber(input)).toBe(expected);
  });
});

describe("the categories bitmask", () => {
  test("bit i is the i-th category", () => {
    CATEGORIES.forEach((c, i) => {
      expect(categoryBit(c)).toBe(i);
      expect(categoryAt(i)).toBe(c);
      expect(maskOf([c])).toBe(1 << i);
    });
    expect(() => categoryAt(16)).toThrow(RangeError);
  });

  test.each([
    [[], 0],
    [["SPAM"], 0b1],
    [["BRUTE_FORCE", "SSH"], 0b1_0000_0000_0010],
    [["SSH", "BRUTE_FORCE", "SSH"], 0b1_0000_0000_0010],
    [["HACKING"], 0x8000],
    [[...CONTRACT_ORDER], 0xffff],
  ] as const)("maskOf(%p) = %i", (categories, mask) => {
    expect(maskOf(categories)).toBe(mask);
  });

  test.each([
    [0, []],
    [0b1_0000_0000_0010, ["BRUTE_FORCE", "SSH"]],
    [0x8001, ["SPAM", "HACKING"]],
    [0x1_8001, ["SPAM", "HACKING"]], // bits beyond the 16 are ignored
  ] as const)("categoriesFromMask(%i) = %p, in the contract's order", (mask, categories) => {
    expect(categoriesFromMask(mask)).toEqual([...categories]);
  });

  test("every mask round-trips through the category list", () => {
    for (let mask = 0; mask <= ALL_CATEGORIES_MASK; mask += 97) expect(maskOf(categoriesFromMask(mask))).toBe(mask);
    expect(categoriesFromMask(ALL_CATEGORIES_MASK)).toEqual(CONTRACT_ORDER);
  });

  test("maskIntersects tells whether an address has any of the filter's categories", () => {
    const filter = maskOf(["SSH", "DDOS"]);
    expect(maskIntersects(maskOf(["SSH", "SPAM"]), filter)).toBe(true);
    expect(maskIntersects(maskOf(["SPAM"]), filter)).toBe(false);
    expect(maskIntersects(0, filter)).toBe(false);
  });
});

describe("parsing a category", () => {
  test.each([
    ["BRUTE_FORCE", "BRUTE_FORCE"],
    ["brute_force", "BRUTE_FORCE"],
    ["brute-force", "BRUTE_FORCE"],
    ["Brute Force", "BRUTE_FORCE"],
    ["sql-injection", "SQL_INJECTION"],
    ["web attack", "WEB_ATTACK"],
    ["ssh", "SSH"],
    ["IoT", "IOT"],
    [" ddos ", "DDOS"],
    ["open-proxy", "OPEN_PROXY"],
  ] as const)("%p reads as %s", (input, expected) => {
    expect(tryParseCategory(input)).toBe(expected);
    expect(parseCategory(input)).toBe(expected);
  });

  test.each(["", "bruteforce", "brute--force", "BRUTE.FORCE", "DNS", "spam!", 5, null, undefined, {}])("%p is not a category", (input) => {
    expect(tryParseCategory(input)).toBeNull();
    const error = thrown(() => parseCategory(input));
    expect(error.errorCode).toBe("validation_failed");
    expect(error.status).toBe(400);
    expect(error.details).toHaveLength(1);
    expect(error.details![0].field).toBe("category");
    expect(error.details![0].message).toContain(`allowed values: ${CONTRACT_ORDER.join(", ")}`);
    expect(error.message).toContain("SPAM, BRUTE_FORCE");
  });

  test("the error names the field it was given", () => {
    expect(thrown(() => parseCategory("nope", "categories")).details).toEqual([
      { field: "categories", message: `unknown category "nope"; allowed values: ${CONTRACT_ORDER.join(", ")}` },
    ]);
  });

  test("isCategory accepts only the uppercase form", () => {
    expect(isCategory("SSH")).toBe(true);
    expect(isCategory("ssh")).toBe(false);
    expect(isCategory(3)).toBe(false);
  });

  test.each(CONTRACT_ORDER)("%s goes out as lowercase in webhooks", (c) => {
    expect(lowercaseCategory(c)).toBe(c.toLowerCase() as never);
  });
  test("brute_force in webhooks", () => expect(lowercaseCategory("BRUTE_FORCE")).toBe("brute_force"));
});

describe("parsing a category list", () => {
  test.each([
    ["ssh", ["SSH"]],
    ["ssh,brute-force", ["SSH", "BRUTE_FORCE"]],
    [" SSH , ddos ,", ["SSH", "DDOS"]],
    ["spam,SPAM,Spam", ["SPAM"]],
    ["HACKING,spam", ["HACKING", "SPAM"]],
  ] as const)("%p → %p", (input, expected) => {
    expect(parseCategoryList(input)).toEqual([...expected]);
  });

  test("every unknown item is named in one error", () => {
    const error = thrown(() => parseCategoryList("ssh,foo,bar"));
    expect(error.errorCode).toBe("validation_failed");
    expect(error.details).toEqual([
      { field: "category", message: `unknown categories "foo", "bar"; allowed values: ${CONTRACT_ORDER.join(", ")}` },
    ]);
  });

  test.each(["", ",", " , "])("%p is an empty list: 400", (input) => {
    const error = thrown(() => parseCategoryList(input));
    expect(error.status).toBe(400);
    expect(error.details![0].message).toContain("at least one category");
  });
});
