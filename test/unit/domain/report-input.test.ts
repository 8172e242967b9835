import { describe, expect, test } from "bun:test";
import { AppError, type FieldError } from "../../../src/domain/errors";
import { type Ip, tryParseIp, unreportableReason } from "../../../src/domain/ip";
import { parseReportInput } from "../../../src/domain/report-input";

function failure(body: unknown): AppError {
  try {
    parseReportInput(body);
  } catch (e) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error("expected the body to be refused");
}

const details = (body: unknown): FieldError[] => failure(body).details ?? [];
const fields = (body: unknown): string[] => details(body).map((d) => d.field);

describe("shape A {ipAddress, category, description, severity}", () => {
  test("a full body is read as shape A", () => {
    const r = parseReportInput({ ipAddress: "203.0.113.7", category: "BRUTE_FORCE", description: "sshd failures", severity: 4 });
    expect(r.shape).toBe("A");
    expect(r.ip.text).toBe("203.0.113.7" as never);
    expect(r.ip.version).toBe(4);
    expect(r.category).toBe("BRUTE_FORCE");
    expect(r.severity).toBe(4);
    expect(r.description).toBe("sshd failures");
    expect(r.evidence).toBeNull();
  });

  test.each([1, 2, 3, 4, 5] as const)("severity %i is accepted", (severity) => {
    expect(parseReportInput({ ipAddress: "198.51.100.1", category: "SSH", description: "", severity }).severity).toBe(severity);
  });

  test.each([
    ["no category", { ipAddress: "198.51.100.1", description: "x", severity: 3 }, ["category"]],
    ["no description", { ipAddress: "198.51.100.1", category: "SSH", severity: 3 }, ["description"]],
    ["no severity", { ipAddress: "198.51.100.1", category: "SSH", description: "x" }, ["severity"]],
    ["severity null", { ipAddress: "198.51.100.1", category: "SSH", description: "x", severity: null }, ["severity"]],
    ["nothing but the address", { ipAddress: "198.51.100.1" }, ["category", "severity", "description"]],
    ["severity 0", { ipAddress: "198.51.100.1", category: "SSH", description: "x", severity: 0 }, ["severity"]],
    ["severity 6", { ipAddress: "198.51.100.1", category: "SSH", description: "x", severity: 6 }, ["severity"]],
    ["severity 2.5", { ipAddress: "198.51.100.1", category: "SSH", description: "x", severity: 2.5 }, ["severity"]],
    ["severity as a word", { ipAddress: "198.51.100.1", category: "SSH", description: "x", severity: "high" }, ["severity"]],
    ["severity as a numeric string", { ipAddress: "198.51.100.1", category: "SSH", description: "x", severity: "3" }, ["severity"]],
    ["description not a string", { ipAddress: "198.51.100.1", category: "SSH", description: 5, severity: 3 }, ["description"]],
    ["every field bad", { ipAddress: 17, category: "nope", description: [], severity: true }, ["ipAddress", "category", "severity", "description"]],
  ])("%s: 400 naming %p", (_name, body, expected) => {
    const error = failure(body);
    expect(error.errorCode).toBe("validation_failed");
    expect(error.status).toBe(400);
    expect(error.details!.map((d) => d.field)).toEqual(expected);
  });

  test("a shape-A severity error says what is allowed", () => {
    expect(details({ ipAddress: "198.51.100.1", category: "SSH", description: "", severity: "high" })).toEqual([
      { field: "severity", message: "must be an integer from 1 to 5" },
    ]);
  });
});

describe("shape B {ip, category, severity?, description?, evidence?}", () => {
  test("the smallest body takes severity 3, an empty description and no evidence", () => {
    const r = parseReportInput({ ip: "2001:DB8::1", category: "port-scan" });
    expect(r).toMatchObject({ shape: "B", category: "PORT_SCAN", severity: 3, description: "", evidence: null });
    expect(r.ip.version).toBe(6);
    expect(r.ip.text).toBe("2001:db8::1" as never);
  });

  test("a full body keeps evidence", () => {
    const r = parseReportInput({ ip: "192.0.2.10", category: "ssh", severity: "high", description: "d", evidence: "Nov 21 sshd[1]: Failed" });
    expect(r).toMatchObject({ shape: "B", category: "SSH", severity: 4, description: "d", evidence: "Nov 21 sshd[1]: Failed" });
  });

  test.each([
    ["low", 1], ["medium", 3], ["high", 4], ["critical", 5], ["HIGH", 4], ["Critical", 5], [1, 1], [2, 2], [5, 5],
  ] as const)("severity %p is %i", (severity, expected) => {
    expect(parseReportInput({ ip: "192.0.2.10", category: "ssh", severity }).severity).toBe(expected);
  });

  test.each(["severe", "", "2", 0, 7, 3.5, false])("severity %p: 400", (severity) => {
    expect(details({ ip: "192.0.2.10", category: "ssh", severity })).toEqual([
      { field: "severity", message: "must be an integer from 1 to 5 or one of low, medium, high, critical" },
    ]);
  });

  test("null optional fields are taken as absent", () => {
    const r = parseReportInput({ ip: "192.0.2.10", category: "ssh", severity: null, description: null, evidence: null });
    expect(r).toMatchObject({ severity: 3, description: "", evidence: null });
  });

  test("a lowercase category from the specification's sample is accepted", () => {
    expect(parseReportInput({ ip: "192.0.2.10", category: "brute_force", severity: "high" }).category).toBe("BRUTE_FORCE");
  });

  test("an unknown category names the allowed values", () => {
    const [d] = details({ ip: "192.0.2.10", category: "worm" });
    expect(d.field).toBe("category");
    expect(d.message).toContain('"worm"');
    expect(d.message).toContain("SPAM, BRUTE_FORCE, PORT_SCAN, PHISHING, MALWARE, DDOS, SQL_INJECTION, EXPLOIT, WEB_ATTACK");
  });

  test("evidence is read in shape A too", () => {
    expect(parseReportInput({ ipAddress: "192.0.2.10", category: "ssh", description: "", severity: 2, evidence: "log" }).evidence).toBe("log");
  });

  test("unknown fields are ignored", () => {
    const r = parseReportInput({ ip: "192.0.2.10", category: "ssh", reporter: "someone else", tags: [1, 2], status: "verified" });
    expect(r).toEqual({ ip: r.ip, category: "SSH", severity: 3, description: "", evidence: null, shape: "B" });
  });
});

describe("the address field", () => {
  test.each([
    ["both ipAddress and ip", { ipAddress: "192.0.2.1", ip: "192.0.2.1", category: "ssh" }, "ip"],
    ["neither", { category: "ssh", severity: 3 }, "ipAddress"],
    ["neither (null)", { ip: null, category: "ssh" }, "ipAddress"],
  ])("%s: 400", (_name, body, field) => {
    const error = failure(body);
    expect(error.errorCode).toBe("validation_failed");
    expect(error.details!.map((d) => d.field)).toEqual([field]);
  });

  test.each([
    ["::ffff:203.0.113.9", "203.0.113.9"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1"],
    ["10.1.2.3", "10.1.2.3"], // private space is reportable
    ["169.254.1.1", "169.254.1.1"], // and link-local
    ["fe80::1", "fe80::1"],
  ])("%p is reported as %p", (input, text) => {
    expect(parseReportInput({ ip: input, category: "ssh" }).ip.text).toBe(text as never);
  });

  test.each(["010.0.0.1", "fe80::1%eth0", " 192.0.2.1", "192.0.2.0/24", "example.com", "1.2.3", ""])("%p is not an address: the parser's reason", (input) => {
    const reason = tryParseIp(input);
    expect(typeof reason).toBe("string");
    expect(details({ ip: input, category: "ssh" })).toEqual([{ field: "ip", message: reason as string }]);
    expect(details({ ipAddress: input, category: "ssh", description: "", severity: 1 })).toEqual([{ field: "ipAddress", message: reason as string }]);
  });

  test.each(["0.0.0.0", "::", "127.0.0.1", "127.255.0.9", "::1", "224.0.0.1", "ff02::1", "255.255.255.255", "240.0.0.1"])(
    "%p may not be reported",
    (input) => {
      const ip = tryParseIp(input) as Ip;
      expect(typeof ip).toBe("object");
      const reason = unreportableReason(ip);
      expect(reason).not.toBeNull();
      expect(details({ ip: input, category: "ssh" })).toEqual([{ field: "ip", message: reason as string }]);
    },
  );

  test("a non-string address", () => {
    expect(details({ ip: 3232235777, category: "ssh" })).toEqual([{ field: "ip", message: "must be a string holding an IPv4 or IPv6 address" }]);
  });
});

describe("lengths", () => {
  const base = { ip: "192.0.2.10", category: "ssh" };
  test.each([
    ["description", 1_024, true],
    ["description", 1_025, false],
    ["evidence", 16_384, true],
    ["evidence", 16_385, false],
  ] as const)("%s of %i characters is accepted: %p", (field, length, ok) => {
    const body = { ...base, [field]: "x".repeat(length) };
    if (ok) expect(parseReportInput(body)[field]).toHaveLength(length);
    else expect(details(body)).toEqual([{ field, message: `must be at most ${length - 1} characters` }]);
  });

  test("characters are code points: 1,024 emoji (2,048 UTF-16 units) are accepted, 1,025 are not", () => {
    expect(parseReportInput({ ...base, description: "🔥".repeat(1_024) }).description).toHaveLength(2_048);
    expect(fields({ ...base, description: "🔥".repeat(1_025) })).toEqual(["description"]);
  });

  test("evidence must be a string", () => {
    expect(details({ ...base, evidence: { log: "x" } })).toEqual([{ field: "evidence", message: "must be a string" }]);
  });
});

describe("a body that is not an object", () => {
  // test.each spreads an array row into arguments: the JSON array body is wrapped once more.
  test.each([null, "ip=1.2.3.4", 42, [[{ ip: "192.0.2.1", category: "ssh" }]], undefined])("%p: 400 bad_request", (body) => {
    const error = failure(body);
    expect(error.errorCode).toBe("bad_request");
    expect(error.status).toBe(400);
  });
});

describe("every bad field at once", () => {
  test("shape B with five bad fields lists all five, in field order", () => {
    const error = failure({ ip: "999.1.1.1", category: "x", severity: "huge", description: "d".repeat(2_000), evidence: 1 });
    expect(error.details!.map((d) => d.field)).toEqual(["ip", "category", "severity", "description", "evidence"]);
    expect(error.message.startsWith("Invalid report: ip: ")).toBe(true);
  });
});
