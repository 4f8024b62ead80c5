import { stat } from "node:fs/promises";
import { z } from "zod";
import { defineTriggerCheck } from "../trigger-check.js";

/** Errors that mean "not there (yet)", not "cannot tell". */
const ABSENT = new Set(["ENOENT", "ENOTDIR"]);

/**
 * `fileExists(path)`: fires when the rendered path exists (a file or a
 * directory, e.g. a `_SUCCESS` marker or a partition folder). Producers should
 * write then rename: a file being written already exists.
 */
export const fileExistsCheck = defineTriggerCheck({
  schema: z.object({ path: z.string().min(1) }),
  templateArgs: ["path"],
  async check(args) {
    try {
      const s = await stat(args.path);
      return { fired: true, payload: { path: args.path, size: s.size, mtime: s.mtime.toISOString() } };
    } catch (err) {
      if (ABSENT.has((err as NodeJS.ErrnoException).code ?? "")) return { fired: false, detail: `${args.path} does not exist` };
      throw err;
    }
  },
});
