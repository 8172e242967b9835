import { defineConfig } from "drizzle-kit";

// `npm run db:generate` writes a new migration into drizzle/ after a schema change; `bun build/embed-migrations.ts`
// then turns them into src/store/migrations.generated.ts, which the executable carries.
export default defineConfig({
  dialect: "sqlite",
  schema: "./src/store/schema.ts",
  out: "./drizzle",
});
