import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadJwtSecret, looksLikeJwt } from "../../../src/services/credentials";
import { AppError } from "../../../src/domain/errors";

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
