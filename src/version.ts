// The product version, from package.json at build time (bundled into the executable).
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
