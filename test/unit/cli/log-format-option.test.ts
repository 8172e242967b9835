// --log-format is taken out of the command line wherever it stands, beats ABUSE_INTEL_LOG_FORMAT, and a bad value
// is refused naming where it came from.

import { expect, test } from "bun:test";
import { takeLogFormat } from "../../../src/cli/log-output";

test.each([
  [["serve", "--log-format", "json", "--port", "1"], {}, "json", ["serve", "--port", "1"]],
  [["--log-format=json", "check", "1.2.3.4"], {}, "json", ["check", "1.2.3.4"]],
  [["serve"], { ABUSE_INTEL_LOG_FORMAT: "json" }, "json", ["serve"]],
  [["serve", "--log-format", "text"], { ABUSE_INTEL_LOG_FORMAT: "json" }, "text", ["serve"]],
  [["serve"], {}, "text", ["serve"]],
  [["serve"], { ABUSE_INTEL_LOG_FORMAT: "" }, "text", ["serve"]],
] as const)("%p with %p logs as %s", (argv, env, format, rest) => {
  expect(takeLogFormat([...argv], env)).toEqual({ format, argv: [...rest] });
});

test.each([
  [["serve", "--log-format", "xml"], {}, '--log-format must be text or json, got "xml"'],
  [["serve", "--log-format"], {}, "--log-format needs a value: text or json"],
  [["serve"], { ABUSE_INTEL_LOG_FORMAT: "syslog" }, 'ABUSE_INTEL_LOG_FORMAT must be text or json, got "syslog"'],
] as const)("%p with %p is refused", (argv, env, message) => {
  expect(() => takeLogFormat([...argv], env)).toThrow(message);
});
