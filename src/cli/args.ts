// A small argv parser shared by every command: positionals, `--flag value`, `--flag=value`, repeatable flags
// and boolean switches. Commands declare which flags are switches; anything unknown is an error.

import { booleanOf } from "../config";
import { AppError } from "../domain/errors";

export interface ParsedArgs {
  positionals: string[];
  flags: Map<string, string[]>;
}

export interface ArgSpec {
  /** Flags that take a value. */
  values?: string[];
  /** Flags that take no value. */
  switches?: string[];
}

export function parseArgs(argv: string[], spec: ArgSpec): ParsedArgs {
  const values = new Set(spec.values ?? []);
  const switches = new Set(spec.switches ?? []);
  const positionals: string[] = [];
  const flags = new Map<string, string[]>();
  const add = (flag: string, value: string) => flags.set(flag, [...(flags.get(flag) ?? []), value]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--") {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith("--")) {
      const eq = arg.indexOf("=");
      const name = eq > 0 ? arg.slice(0, eq) : arg;
      if (switches.has(name)) {
        add(name, eq > 0 ? switchValue(name, arg.slice(eq + 1)) : "true");
      } else if (values.has(name)) {
        const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
        if (value === undefined) throw new AppError("bad_request", `${name} needs a value`);
        add(name, value);
      } else {
        throw new AppError("bad_request", `unknown option ${name}`);
      }
    } else {
      positionals.push(arg);
    }
  }
  return { positionals, flags };
}

/** A switch given a value (`--replace=false`), read by the configuration's one on/off rule. */
const switchValue = (name: string, raw: string): "true" | "false" => (booleanOf(raw, name) ? "true" : "false");

export const flag = (args: ParsedArgs, name: string): string | undefined => args.flags.get(name)?.at(-1);
export const hasSwitch = (args: ParsedArgs, name: string): boolean => {
  const v = args.flags.get(name)?.at(-1);
  return v !== undefined && v !== "false";
};
