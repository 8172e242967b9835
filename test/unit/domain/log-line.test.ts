// The log's line formats: journald's level prefix on every line of a text event, and one JSON object per event.

import { describe, expect, test } from "bun:test";
import { journalText, jsonLine, logFormatOf, withoutAnsi } from "../../../src/domain/log-line";

const time = new Date("2026-11-21T08:00:00.000Z");

describe("journalText", () => {
  test.each([
    ["error", "<3>"],
    ["warning", "<4>"],
    ["info", "<6>"],
    ["debug", "<7>"],
  ] as const)("%s lines start with %s", (level, prefix) => {
    expect(journalText(level, "a")).toBe(`${prefix}a`);
  });

  test("every line of a multi-line message carries the level, colours removed", () => {
    expect(journalText("error", "\x1b[31mfailed:\x1b[0m\n    at f (a.ts:1)")).toBe("<3>failed:\n<3>    at f (a.ts:1)");
  });
});

describe("jsonLine", () => {
  test("time, level and msg first, then the fields; a multi-line message stays one line", () => {
    const line = jsonLine({ time, level: "info", msg: "first start:\n  email: a@b", fields: { command: "serve" } });
    expect(line).not.toContain("\n");
    expect(line).toBe('{"time":"2026-11-21T08:00:00.000Z","level":"info","msg":"first start:\\n  email: a@b","command":"serve"}');
  });

  test("a field cannot replace time, level or msg", () => {
    const parsed = JSON.parse(jsonLine({ time, level: "error", msg: "m", fields: { level: "info", msg: "x", time: "y", pid: 7 } }));
    expect(parsed).toEqual({ time: "2026-11-21T08:00:00.000Z", level: "error", msg: "m", pid: 7 });
  });

  test("colour sequences are removed from the message", () => {
    expect(JSON.parse(jsonLine({ time, level: "warning", msg: "\x1b[1;33mslow\x1b[0m" })).msg).toBe("slow");
  });
});

test("withoutAnsi keeps text without escape sequences as it is", () => {
  expect(withoutAnsi("plain [31m text")).toBe("plain [31m text");
});

test.each([
  ["text", "text"],
  ["JSON", "json"],
  [" json ", "json"],
  ["xml", null],
  ["", null],
])("logFormatOf(%p) is %p", (raw, expected) => {
  expect(logFormatOf(raw)).toBe(expected as never);
});
