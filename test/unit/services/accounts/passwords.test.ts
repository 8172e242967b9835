import { describe, expect, test } from "bun:test";
import { generatePassword, hashPassword, passwordProblem, randomBase62, verifyAgainstNothing, verifyPassword } from "../../../../src/services/accounts/passwords";

describe("randomBase62", () => {
  test("gives exactly the asked length of [0-9A-Za-z]", () => {
    for (const length of [0, 1, 40, 1000]) expect(randomBase62(length)).toMatch(new RegExp(`^[0-9A-Za-z]{${length}}$`));
  });

  test("uses every character about equally often (no modulo bias)", () => {
    // 62,000 draws: each character expected 1,000 times. With modulo bias (byte % 62 over 0..255) the first
    // eight characters would come ~1,250 times; a chi-square over 61 degrees of freedom stays far below 150
    // for a uniform source (p < 1e-8 of exceeding it).
    const text = randomBase62(62_000);
    const counts = new Map<string, number>();
    for (const c of text) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    let chi = 0;
    for (const n of counts.values()) chi += (n - 1000) ** 2 / 1000;
    expect(chi).toBeLessThan(150);
  });

  test("generated passwords differ and pass the password rules", () => {
    const a = generatePassword();
    expect(a).not.toBe(generatePassword());
    expect(passwordProblem(a)).toBeNull();
  });
});

describe("passwords", () => {
  test("are hashed with argon2id and verified", async () => {
    const hash = await hashPassword("a good password");
    expect(hash).toStartWith("$argon2id$");
    expect(await verifyPassword("a good password", hash)).toBe(true);
    expect(await verifyPassword("a good passworD", hash)).toBe(false);
  });

  test("a malformed stored hash fails verification instead of throwing", async () => {
    expect(await verifyPassword("anything", "not a hash")).toBe(false);
  });

  test("verifyAgainstNothing always fails", async () => {
    expect(await verifyAgainstNothing("whatever")).toBe(false);
  });

  test.each([
    ["1234567", "must be at least 8 characters"],
    ["12345678", null],
    ["x".repeat(1024), null],
    ["x".repeat(1025), "must be at most 1024 characters"],
  ])("passwordProblem(%p) is %p", (password, problem) => {
    expect(passwordProblem(password)).toBe(problem);
  });
});
