// Files imported with `with { type: "file" }` resolve to their path (embedded by `bun build --compile`).
declare module "*.bin" {
  const path: string;
  export default path;
}
