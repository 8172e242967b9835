import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadJwtSecret, looksLikeJwt } from "../../../../src/services/accounts/credentials";
import { AppError } from "../../../../src/domain/errors";

describe("looksLikeJwt: three base64url parts joined by dots", () => {
  test.each([
    ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_0", true],
    ["a.b.c", true],
    ["aik_" + "A".repeat(40), false],
    ["a.b", false],
    ["a.b.c.d", false],
    ["a..c", false],
    ["a.b.", false],
    ["a.b.c=", false],
    ["a.b c.d", false],
    ["", false],
  ])("%p → %p", (value, expected) => {
    expect(looksLikeJwt(value)).toBe(expected);
  });
});

describe("loadJwtSecret", () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), "abuse-intel-secret-"));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  test("creates 32 random bytes as hex in jwt-secret with mode 0600, and reads the same ones later", () => {
    const dir = tempDir();
    const first = loadJwtSecret(null, dir);
    expect(first.length).toBe(32);
    const file = join(dir, "jwt-secret");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8").trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(loadJwtSecret(null, dir)).toEqual(first);
    expect(loadJwtSecret(null, tempDir())).not.toEqual(first);
  });

  test("a configured secret is used as its UTF-8 bytes and must be at least 32 bytes", () => {
    const dir = tempDir();
    expect(new TextDecoder().decode(loadJwtSecret("s".repeat(32), dir))).toBe("s".repeat(32));
    expect(() => loadJwtSecret("s".repeat(31), dir)).toThrow(AppError);
  });

  test("a damaged secret file is an error naming the file, not a silent new secret", () => {
    const dir = tempDir();
    writeFileSync(join(dir, "jwt-secret"), "short");
    expect(() => loadJwtSecret(null, dir)).toThrow(/jwt-secret/);
  });
});

describe("verifyHs256 agrees with jose's jwtVerify (HS256)", async () => {
  const { SignJWT, jwtVerify } = await import("jose");
  const { createHmac } = await import("node:crypto");
  const { verifyHs256 } = await import("../../../../src/services/accounts/credentials");
  const secret = new TextEncoder().encode("k".repeat(32));
  const other = new TextEncoder().encode("o".repeat(32));
  const now = 1_800_000_000;
  const b64 = (value: unknown) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
  /** A token from raw header and claims, signed with `key` over exactly those parts. */
  const raw = (header: unknown, claims: unknown, key = secret) => {
    const input = `${b64(header)}.${b64(claims)}`;
    return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
  };
  const signed = (claims: Record<string, unknown>, key = secret) => new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).sign(key);
  const HS = { alg: "HS256", typ: "JWT" };

  const cases: [string, () => Promise<string> | string][] = [
    ["valid", () => signed({ sub: "1", exp: now + 60, iat: now })],
    ["expired", () => signed({ sub: "1", exp: now - 1 })],
    ["expiring now", () => signed({ sub: "1", exp: now })],
    ["not yet valid (nbf)", () => signed({ sub: "1", exp: now + 60, nbf: now + 10 })],
    ["nbf now", () => signed({ sub: "1", exp: now + 60, nbf: now })],
    ["another key", () => signed({ sub: "1", exp: now + 60 }, other)],
    ["alg none", () => `${b64({ alg: "none" })}.${b64({ sub: "1", exp: now + 60 })}.`],
    ["alg HS512 header", () => raw({ alg: "HS512" }, { sub: "1", exp: now + 60 })],
    ["exp as a string", () => raw(HS, { sub: "1", exp: String(now + 60) })],
    ["iat as a string", () => raw(HS, { sub: "1", exp: now + 60, iat: "x" })],
    ["claims an array", () => raw(HS, [1, 2])],
    ["header not JSON", () => raw("nope", { sub: "1", exp: now + 60 })],
    ["signature of other bytes", async () => (await signed({ sub: "1", exp: now + 60 })).replace(/\.[^.]+$/, `.${b64("x".repeat(32))}`)],
    ["claims changed after signing", async () => {
      const [h, , s] = (await signed({ sub: "1", exp: now + 60 })).split(".");
      return `${h}.${b64({ sub: "2", exp: now + 60 })}.${s}`;
    }],
  ];

  test.each(cases)("%s", async (_name, make) => {
    const token = await make();
    const ours = verifyHs256(token, secret, now);
    const theirs = await jwtVerify(token, secret, { algorithms: ["HS256"], currentDate: new Date(now * 1000) }).then(
      (r) => r.payload as Record<string, unknown>,
      () => null,
    );
    expect(ours).toEqual(theirs);
  });
});
