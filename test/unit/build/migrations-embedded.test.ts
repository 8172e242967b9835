// The executable carries its migrations as a generated module: it must hold exactly what drizzle/ holds,
// or a compiled server would migrate a database to a schema the code does not expect.

import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { renderMigrationsModule } from "../../../build/embed-migrations";
import { embeddedMigrations } from "../../../src/store/migrations.generated";

const root = join(import.meta.dir, "../../..");

describe("src/store/migrations.generated.ts", () => {
  test("is in sync with drizzle/ (run `bun build/embed-migrations.ts` after `drizzle-kit generate`)", () => {
    const committed = readFileSync(join(root, "src/store/migrations.generated.ts"), "utf8");
    expect(committed).toBe(renderMigrationsModule());
  });

  test("lists every migration of the drizzle journal, in order", () => {
    const journal = JSON.parse(readFileSync(join(root, "drizzle/meta/_journal.json"), "utf8")) as { entries: { tag: string }[] };
    expect(embeddedMigrations.map((m) => m.tag)).toEqual(journal.entries.map((e) => e.tag));
    expect(embeddedMigrations.length).toBeGreaterThan(0);
  });
});
