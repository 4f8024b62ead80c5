import { access, constants, mkdir } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));

let chosen: Promise<string> | undefined;

/**
 * The directory for the loader's build output (the child runtime, compiled
 * definitions files): `node_modules/.cache/tributary` in this package, or,
 * when that cannot be written (a read-only install), one in the OS temp
 * directory. Both paths contain a `node_modules` segment on purpose: the
 * SDK's call-site detection (callerFile) skips frames in node_modules, and
 * the SDK runs from the runtime bundle in here.
 */
export function cacheDir(): Promise<string> {
  chosen ??= (async () => {
    const candidates = [
      path.join(PACKAGE_DIR, "node_modules", ".cache", "tributary"),
      path.join(os.tmpdir(), `tributary-${process.getuid?.() ?? "user"}`, "node_modules", ".cache", "tributary"),
    ];
    for (const dir of candidates) {
      try {
        await mkdir(dir, { recursive: true });
        await access(dir, constants.W_OK);
        return dir;
      } catch {
        // Try the next one.
      }
    }
    throw new Error(`the definitions loader cannot write its build cache to any of ${candidates.join(", ")}`);
  })();
  // A failure is not remembered: the next load tries again.
  chosen.catch(() => (chosen = undefined));
  return chosen;
}
