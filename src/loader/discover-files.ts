import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { LoadError } from "../errors/index.js";

const DEFINITION_FILE = /\.(?:ts|mts|js|mjs)$/;
const NOT_DEFINITIONS = /\.d\.m?ts$|\.test\.m?[tj]s$/;

/** Whether a path (relative to the definitions directory, `/`-separated) is a definitions file. */
export function isDefinitionFile(relFile: string): boolean {
  const parts = relFile.split("/");
  if (parts.some((p) => p.startsWith(".") || p.startsWith("_") || p === "node_modules")) return false;
  return DEFINITION_FILE.test(relFile) && !NOT_DEFINITIONS.test(relFile);
}

/**
 * Every definitions file under `dir`, recursively, relative and
 * `/`-separated, sorted: `*.ts`, `*.mts`, `*.js`, `*.mjs`, skipping
 * `node_modules`, dotfiles and dot-directories, `*.d.ts` and `*.test.ts`.
 *
 * Files whose name starts with `_`, and everything in a directory whose name
 * starts with `_`, are helpers (`_synthetic.ts`, `_lib/`): not loaded on their
 * own, but compiled into the definitions files that import them, and a change
 * to one reloads those files in watch mode.
 */
export async function discoverDefinitionFiles(dir: string): Promise<string[]> {
  const root = path.resolve(dir);
  try {
    if (!(await stat(root)).isDirectory()) throw new Error("not a directory");
  } catch {
    throw new LoadError(
      "LOAD_DIR_NOT_FOUND",
      `the definitions directory ${root} does not exist or is not a directory; create it or pass --definitions DIR`,
      { location: { file: root } },
    );
  }
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    const entries = await readdir(path.join(root, rel), { withFileTypes: true });
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name.startsWith("_") || entry.name === "node_modules") continue;
      const childRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        await walk(childRel);
        continue;
      }
      // Symlinked files count; symlinked directories are not followed (no loops).
      const isFile = entry.isFile() || (entry.isSymbolicLink() && (await stat(path.join(root, childRel)).catch(() => undefined))?.isFile());
      if (isFile && isDefinitionFile(childRel)) out.push(childRel);
    }
  };
  await walk("");
  return out.sort();
}
