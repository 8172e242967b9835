// A benchmark's own options (`--seconds 5`, `--binary PATH`): the value after the flag, or a fallback.

/** The number after `name` on the command line, or `fallback` when the flag is absent. */
export function argNumber(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
}

/** The text after `name` on the command line, or undefined when the flag is absent. */
export function argText(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
}
