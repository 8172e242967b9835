// The body reader's rules (body.ts): the bulk route's usual body goes through its own scanner, every other
// JSON body through JSON.parse, with the same limits and errors.

import { describe, expect, test } from "bun:test";
import { BulkInputs } from "../../../src/domain/bulk-inputs";
import { AppError } from "../../../src/domain/errors";
import { bodyRuleFor, readBody } from "../../../src/http/body";

const post = (path: string, body: string, type = "application/json") =>
  readBody(new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": type }, body }), bodyRuleFor(path));

describe("readBody", () => {
  test("the bulk route's usual body is read by its scanner into BulkInputs", async () => {
    const inputs = await post("/v1/ip/bulk", '{"ips":["192.0.2.1","2001:db8::1"]}');
    expect(inputs).toBeInstanceOf(BulkInputs);
    expect((inputs as BulkInputs).count).toBe(2);
  });

  test("a bulk body the scanner does not read, and other routes' bodies, are parsed JSON", async () => {
    expect(await post("/v1/ip/bulk", '{"ips":["192.0.2.1"],"note":"x"}')).toEqual({ ips: ["192.0.2.1"], note: "x" });
    expect(await post("/v1/ip/report", '{"ips":["192.0.2.1"]}')).toEqual({ ips: ["192.0.2.1"] });
  });

  test("malformed JSON and a wrong media type are refused on the bulk route too", async () => {
    const code = (p: Promise<unknown>) => p.then(() => "none", (e) => (e instanceof AppError ? e.errorCode : "other"));
    expect(await code(post("/v1/ip/bulk", '{"ips":['))).toBe("bad_request");
    expect(await code(post("/v1/ip/bulk", "ips=1.2.3.4", "application/x-www-form-urlencoded"))).toBe("unsupported_media_type");
  });
});
