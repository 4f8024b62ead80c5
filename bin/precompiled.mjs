// Whether the precompiled CLI in dist/cli (scripts/build-cli.mjs) was built from the sources as they are now. The
// build lists every file it read with its size and modification time in dist/cli/inputs.json; one stat per file
// tells whether any changed since.
import { readFileSync, statSync } from "node:fs";

/**
 * The precompiled CLI's entry point under `root` (the package directory, a file URL ending in `/`) when every file
 * it was built from is as the build saw it; otherwise why not, for the caller to run the sources instead.
 *
 * @param {URL} root
 * @returns {{ entry: URL } | { stale: string }}
 */
export function precompiledCli(root) {
  const dir = new URL("dist/cli/", root);
  let files;
  try {
    ({ files } = JSON.parse(readFileSync(new URL("inputs.json", dir), "utf8")));
  } catch {
    return { stale: "dist/cli is not built (npm run build:cli builds it)" };
  }
  const entry = new URL("main.mjs", dir);
  if (!statSync(entry, { throwIfNoEntry: false })?.isFile()) return { stale: "dist/cli/main.mjs is missing" };
  for (const [file, seen] of Object.entries(files ?? {})) {
    const now = statSync(new URL(file, root), { throwIfNoEntry: false });
    if (!now) return { stale: `${file} is gone since dist/cli was built` };
    if (now.size !== seen.size || now.mtimeMs !== seen.mtimeMs) return { stale: `${file} changed since dist/cli was built` };
  }
  return { entry };
}
