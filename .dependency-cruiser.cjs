// The import rules of src/ (ARCHITECTURE.md): each layer imports only layers below it, and nothing forms a cycle.
// Checked by test/unit/build/import-graph.test.ts; `npm run depcruise` prints the same report.
// Layers, lowest first: domain (+ version) < index (+ config) < store < services < http | jobs | dns < app < cli < main.
const layers = [
  ["domain", "^src/(domain/|version\\.ts$)"],
  ["index", "^src/(index/|config\\.ts$)"],
  ["store", "^src/store/"],
  ["services", "^src/services/"],
  ["http", "^src/http/"],
  ["jobs", "^src/jobs/"],
  ["dns", "^src/dns/"],
  ["app", "^src/app/"],
  ["cli", "^src/cli/"],
  ["main", "^src/main\\.ts$"],
];
const rank = { domain: 0, index: 1, store: 2, services: 3, http: 4, jobs: 4, dns: 4, app: 5, cli: 6, main: 7 };
const above = (name) => layers.filter(([other]) => rank[other] > rank[name]).map(([, path]) => path);
const peers = (name) => layers.filter(([other]) => other !== name && rank[other] === rank[name]).map(([, path]) => path);

module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      severity: "error",
      comment: "An import cycle ties two modules into one: break it by moving the shared part down.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    ...layers.flatMap(([name, path]) => [
      ...(above(name).length === 0 ? [] : [{
        name: `${name}-imports-upward`,
        severity: "error",
        comment: `${name} may import only the layers below it (ARCHITECTURE.md).`,
        from: { path },
        to: { path: above(name) },
      }]),
      ...(peers(name).length > 0
        ? [{ name: `${name}-imports-peer`, severity: "error", comment: `${name} must not import its peer layer.`, from: { path }, to: { path: peers(name) } }]
        : []),
    ]),
    {
      name: "domain-imports-nothing-of-ours-but-domain",
      severity: "error",
      comment: "domain/ is pure: no I/O modules, no framework.",
      from: { path: "^src/domain/" },
      to: { path: "^(bun:sqlite|elysia|drizzle-orm|node:fs|node:net|node:http)" },
    },
    {
      name: "services-see-no-http-framework",
      severity: "error",
      comment: "Services never see an Elysia context.",
      from: { path: "^src/(services|store|index|domain)/" },
      to: { path: "node_modules/elysia/" },
    },
  ],
  options: {
    parser: "swc",
    tsConfig: { fileName: "tsconfig.json" },
    // Type-only imports count too: a type that points upward is a design that points upward.
    tsPreCompilationDeps: true,
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.generated\\.ts$" },
    includeOnly: "^src/",
  },
};
