import path from "node:path";
import { expect, it } from "vitest";
import { describePostgres, useCommandStore } from "../support/pg.js";
import { runCli } from "./run-cli.js";

// No server listens on port 9: every command works in-process on the database.
const NO_SERVER = ["--url", "http://127.0.0.1:9"];

/** `asset@partition` of the steps in the run table `--wait` prints (checks left out). */
function stepsOf(stdout: string): string[] {
  return stdout
    .split("\n")
    .map((line) => /^(\S+)\s+(\d{4}-\d{2}-\d{2})\s+(\w+)/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => `${m[1]}@${m[2]} ${m[3]}`);
}

describePostgres("the first days of a trailing window (demo shop/revenue_7d, startOffset -6)", () => {
  const at = useCommandStore("tributary-trailing-");

  it("materialise with --include-upstream: they read the days there are", async () => {
    const env = { ...at.env, TRIBUTARY_DEMO_DATA: path.join(at.dataDir, "demo-data") };
    const materialize = (partition: string) =>
      runCli(
        [
          "materialize",
          "shop/revenue_7d",
          "--partition",
          partition,
          "--include-upstream",
          "--wait",
          "--data-dir",
          at.dataDir,
          ...NO_SERVER,
        ],
        {
          env,
          timeoutMs: 400_000,
        },
      );
    const first = await materialize("2025-01-01");
    expect(first.code, first.stdout + first.stderr).toBe(0);
    // Nothing before the first day is read, so nothing before it is planned.
    expect(stepsOf(first.stdout)).toEqual(["shop/raw_orders@2025-01-01 success", "shop/revenue_7d@2025-01-01 success"]);
    const third = await materialize("2025-01-03");
    expect(third.code, third.stdout + third.stderr).toBe(0);
    expect(stepsOf(third.stdout)).toEqual([
      "shop/raw_orders@2025-01-02 success",
      "shop/raw_orders@2025-01-03 success",
      "shop/revenue_7d@2025-01-03 success",
    ]);
  }, 900_000);
});
