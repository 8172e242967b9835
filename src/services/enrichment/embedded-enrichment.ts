// The packed default range table (build/generated/enrichment.bin, written by build/pack-enrichment.ts). The
// `type: "file"` import makes `bun build --compile` embed the file; in the executable the path is under /$bunfs.

import tablePath from "../../../build/generated/enrichment.bin" with { type: "file" };

export const embeddedTablePath: string = tablePath;
