// `tributary reconciler` refuses bad liveness flags before it opens any database, naming the flag.
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cliBudget, runCli } from "./run-cli.js";

describe("tributary reconciler: bad liveness flags", () => {
  it(
    "refuses a --presumed-dead-after that is not a duration or is shorter than 2s",
    async () => {
      const cwd = await mkdtemp(path.join(os.tmpdir(), "tributary-reconciler-flags-"));
      const [short, garbled] = await Promise.all([
        runCli(["reconciler", "--presumed-dead-after", "1s"], { cwd }),
        runCli(["reconciler", "--presumed-dead-after", "soon"], { cwd }),
      ]);
      expect(short.code, short.stderr).toBe(1);
      expect(short.stderr).toContain('[CLI_USAGE] --presumed-dead-after: "1s" is shorter than 2s');
      expect(garbled.code, garbled.stderr).toBe(1);
      expect(garbled.stderr).toContain('--presumed-dead-after: "soon" is not a positive duration');
    },
    cliBudget(2),
  );
});
