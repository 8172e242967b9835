import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { generateApiKey, hashApiKey, parseKeyName } from "../../../../src/services/accounts/api-keys";
import { AppError } from "../../../../src/domain/errors";

describe("API keys", () => {
  test("are aik_ and 40 base62 characters, different every time", () => {
    const keys = new Set(Array.from({ length: 1000 }, generateApiKey));
    expect(keys.size).toBe(1000);
    for (const key of keys) expect(key).toMatch(/^aik_[0-9A-Za-z]{40}$/);
  });

  test("are hashed as lowercase hex SHA-256 of the whole key", () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toBe(createHash("sha256").update(key).digest("hex"));
  });

  test.each([
    ["firewall", "firewall"],
    ["  padded  ", "padded"],
    ["x".repeat(100), "x".repeat(100)],
  ])("the name %p is kept as %p", (raw, name) => {
    expect(parseKeyName(raw)).toBe(name);
  });

  test.each([undefined, null, 3, "", "  ", "x".repeat(101), "bell\u0007"])("the name %p is refused", (raw) => {
    expect(() => parseKeyName(raw)).toThrow(AppError);
  });
});
