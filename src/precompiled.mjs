// Whether the precompiled code in dist/cli (scripts/build-cli.mjs) was built from the sources as they are now. The
// build lists every file it read with its size and modification time in dist/cli/inputs.json; one stat per file
// tells whether any changed since. Plain JS: bin/tributary.mjs asks before it has anything to run TypeScript with.
import { readFileSync, statSync } from "node:fs";

/**
 * dist/cli/ under the package directory `root` when every file the precompiled code there was built from is as the
 * build saw it (and TRIBUTARY_RUN_SOURCES is not 1); otherwise why not, for the caller to run the sources instead.
 *
 * @param {URL} [root] the package directory (a file URL ending in `/`): by default this one
 * @returns {{ dir: URL } | { stale: string }}
 */
export function precompiled(root = new URL("../", import.meta.url)) {
  if (process.env.TRIBUTARY_RUN_SOURCES === "1") return { stale: "TRIBUTARY_RUN_SOURCES=1" };
  const dir = new URL("dist/cli/", root);
  let files;
  try {
    ({ files } = JSON.parse(readFileSync(new URL("inputs.json", dir), "utf8")));
  } catch {
    return { stale: "dist/cli is not built (npm run build:cli builds it)" };
  }
  for (const [file, seen] of Object.entries(files ?? {})) {
    const now = statSync(new URL(file, root), { throwIfNoEntry: false });
    if (!now) return { stale: `${file} is gone since dist/cli was built` };
    if (now.size !== seen.size || now.mtimeMs !== seen.mtimeMs) return { stale: `${file} changed since dist/cli was built` };
  }
  return { dir };
}
