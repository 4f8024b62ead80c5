// The example that shows tributary/testing (examples/tested-sensors) runs its own tests in Node's test runner, the
// way a project's `npm test` does; its definitions load as a definitions directory (test/cli checks every example).
import { spawn } from "node:child_process";
import path from "node:path";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");

it("examples/tested-sensors passes its tests in Node's test runner", async () => {
  const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", "--test", "examples/tested-sensors/sensors.test.ts"], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, output }));
  });
  expect(code, output).toBe(0);
  expect(output).toMatch(/^# pass 3$/m);
  expect(output).toMatch(/^# fail 0$/m);
}, 120_000);
