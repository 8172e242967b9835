import { describe, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import {
  buildBody,
  eventData,
  isSuccessStatus,
  MAX_ATTEMPTS,
  parseEventList,
  retryDelayAfter,
  RETRY_DELAYS_MS,
  signatureMatches,
  signBody,
  webhookSecretProblem,
  webhookUrlProblem,
} from "../../../src/domain/webhook-payload";

const AT = Date.parse("2026-11-21T08:00:00.000Z");

describe("the event body (contract section 7)", () => {
  test("ip.reported: the four fields, category lowercase, ids as strings, reportId extra", () => {
    const data = eventData("ip.reported", { ip: "203.0.113.7", category: "BRUTE_FORCE", confidence: 95, reporterId: 12, reportId: 345 });
    expect(buildBody("ip.reported", AT, JSON.stringify(data))).toBe(
      '{"event":"ip.reported","timestamp":"2026-11-21T08:00:00.000Z","data":{"ip":"203.0.113.7","category":"brute_force","confidence":95,"reporter_id":"12","reportId":"345"}}',
    );
  });

  test("ip.verified has the same shape as ip.reported", () => {
    const data = eventData("ip.verified", { ip: "2001:db8::1", category: "SSH", confidence: 40, reporterId: 3, reportId: 9 });
    expect(data).toEqual({ ip: "2001:db8::1", category: "ssh", confidence: 40, reporter_id: "3", reportId: "9" });
  });

  test("threat.detected: ip is the CIDR, reporter_id null, kind, threatId and ipCount extra", () => {
    const data = eventData("threat.detected", {
      cidr: "203.0.113.0/24",
      category: null,
      confidence: 70,
      kind: "subnet_burst",
      threatId: 4,
      ipCount: 6,
    });
    expect(JSON.stringify(data)).toBe(
      '{"ip":"203.0.113.0/24","category":null,"confidence":70,"reporter_id":null,"kind":"subnet_burst","threatId":"4","ipCount":6}',
    );
    const campaign = eventData("threat.detected", {
      cidr: "198.51.100.0/22",
      category: "PORT_SCAN",
      confidence: 88,
      kind: "category_campaign",
      threatId: 5,
      ipCount: 21,
      asn: 64500,
    });
    expect(campaign).toEqual({
      ip: "198.51.100.0/22",
      category: "port_scan",
      confidence: 88,
      reporter_id: null,
      kind: "category_campaign",
      threatId: "5",
      ipCount: 21,
      asn: 64500,
    });
  });

  test("ping keeps the four keys, null, and names its subscription", () => {
    expect(eventData("ping", { webhookId: 7 })).toEqual({ ip: null, category: null, confidence: null, reporter_id: null, webhookId: "7" });
  });

  test.each([-1, 101, 50.5, Number.NaN])("confidence %p is refused", (confidence) => {
    expect(() => eventData("ip.reported", { ip: "203.0.113.7", category: "SPAM", confidence, reporterId: 1, reportId: 1 })).toThrow(RangeError);
  });

  test("the body splices the stored data bytes unchanged", () => {
    const stored = '{"ip":"203.0.113.7","category":"spam","confidence":1,"reporter_id":"1","note":"caf\\u00e9 ✓"}';
    const body = buildBody("ip.reported", AT, stored);
    expect(body.endsWith(`"data":${stored}}`)).toBe(true);
    expect(JSON.parse(body).data.note).toBe("café ✓");
  });
});

describe("the signature", () => {
  const secret = "whsec_test_secret_0123456789";
  const body = buildBody("ping", AT, JSON.stringify(eventData("ping", { webhookId: 1 })));

  test("is the lowercase hex HMAC-SHA256 of the body bytes", () => {
    const expected = createHmac("sha256", secret).update(Buffer.from(body, "utf8")).digest("hex");
    expect(signBody(secret, body)).toBe(expected);
    expect(signBody(secret, body)).toMatch(/^[0-9a-f]{64}$/);
    expect(signBody(secret, new TextEncoder().encode(body))).toBe(expected);
  });

  test("a known vector (RFC 4231 test case 2)", () => {
    expect(signBody("Jefe", "what do ya want for nothing?")).toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  });

  test("non-ASCII bodies are signed as UTF-8", () => {
    const text = '{"d":"café"}';
    expect(signBody(secret, text)).toBe(createHmac("sha256", secret).update(new TextEncoder().encode(text)).digest("hex"));
  });

  test("verifies with a constant-time comparison; any change to body, secret or signature fails", () => {
    const sig = signBody(secret, body);
    const a = Buffer.from(sig);
    expect(timingSafeEqual(a, Buffer.from(createHmac("sha256", secret).update(body).digest("hex")))).toBe(true);
    expect(signatureMatches(secret, body, sig)).toBe(true);
    expect(signatureMatches(secret, body + " ", sig)).toBe(false);
    expect(signatureMatches(secret + "x", body, sig)).toBe(false);
    expect(signatureMatches(secret, body, sig.toUpperCase())).toBe(false);
    expect(signatureMatches(secret, body, sig.slice(0, 63))).toBe(false);
  });
});

describe("the retry schedule", () => {
  test.each([
    [1, 10_000],
    [2, 60_000],
    [3, 300_000],
    [4, 1_800_000],
    [5, 7_200_000],
    [6, 21_600_000],
    [7, 43_200_000],
    [8, null],
    [9, null],
  ])("after %i failed attempts the next comes after %p ms", (attempts, delay) => {
    expect(retryDelayAfter(attempts)).toBe(delay);
  });

  test("eight attempts in all", () => {
    expect(MAX_ATTEMPTS).toBe(8);
    expect(RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)).toBe(10_000 + 60_000 + 300_000 + 1_800_000 + 7_200_000 + 21_600_000 + 43_200_000);
  });

  test("attempt counts below 1 are a programming error", () => {
    expect(() => retryDelayAfter(0)).toThrow(RangeError);
  });

  test.each([
    [199, false],
    [200, true],
    [202, true],
    [204, true],
    [299, true],
    [301, false],
    [304, false],
    [404, false],
    [500, false],
  ])("status %i is success: %p", (status, ok) => {
    expect(isSuccessStatus(status)).toBe(ok);
  });
});

describe("subscription input", () => {
  test.each([
    ["https://hooks.example.com/abuse", null],
    ["http://127.0.0.1:8080/hook?x=1", null],
    ["http://[::1]:9000/", null],
    ["HTTPS://EXAMPLE.COM/", null],
    ["ftp://example.com/", "must use http or https"],
    ["javascript:alert(1)", "must use http or https"],
    ["file:///etc/passwd", "must use http or https"],
    ["example.com/hook", "is not a valid URL"],
    ["", "must be an http or https URL"],
    [" https://example.com/", "must not contain whitespace"],
    ["https://exa mple.com/", "must not contain whitespace"],
    [42, "must be an http or https URL"],
    [null, "must be an http or https URL"],
  ])("url %p → %p", (url, problem) => {
    expect(webhookUrlProblem(url)).toBe(problem);
  });

  test("a url may have 2048 characters, not more", () => {
    const base = "https://example.com/";
    expect(webhookUrlProblem(base + "a".repeat(2048 - base.length))).toBeNull();
    expect(webhookUrlProblem(base + "a".repeat(2049 - base.length))).toBe("must be at most 2048 characters");
  });

  test.each([
    ["0123456789abcdef", null],
    ["0123456789abcde", "must be at least 16 characters"],
    ["x".repeat(256), null],
    ["y".repeat(257), "must be at most 256 characters"],
    ["with a space 0123456", "must be printable ASCII without spaces"],
    ["ünïcödé-secret-0123", "must be printable ASCII without spaces"],
    [1234567890123456, "must be a string"],
  ])("secret %p → %p", (secret, problem) => {
    expect(webhookSecretProblem(secret)).toBe(problem);
  });

  test("events: known kinds, duplicates dropped, order kept", () => {
    expect(parseEventList(["ip.verified", "ip.reported", "ip.verified"])).toEqual({ events: ["ip.verified", "ip.reported"] });
    expect(parseEventList(["ip.reported", "ip.verified", "threat.detected", "ping"])).toEqual({
      events: ["ip.reported", "ip.verified", "threat.detected", "ping"],
    });
  });

  test.each([[[]], ["ip.reported"], [null], [["ip.reported", "ip.deleted"]], [["IP.REPORTED"]], [[1]]])("events %p are refused", (events) => {
    expect("problem" in parseEventList(events)).toBe(true);
  });
});
