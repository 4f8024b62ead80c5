// The README's tour, run as written: every shell command of its "A five-minute tour" section, in order, against a
// real `tributary dev` on the demo. A command that fails, or a GraphQL answer with errors, fails the test with the
// command and what it printed; so does a demo run that failed along the way.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, graphqlAt, ROOT, startDev, type DevServer } from "../cli/run-cli.js";

const BIN = path.join(ROOT, "bin/tributary.mjs");
const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g;

interface TourCommand {
  /** 1-based line of the README where the command starts. */
  line: number;
  text: string;
}

/** The shell commands of the README's tour: lines of its ```sh blocks, continuation lines joined. */
export function tourCommands(readme: string): TourCommand[] {
  const lines = readme.split("\n");
  const start = lines.findIndex((l) => /^## A five-minute tour/.test(l));
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  if (start < 0 || end < 0) throw new Error('README.md has no "## A five-minute tour" section followed by another section');
  const commands: TourCommand[] = [];
  let inSh = false;
  let pending: TourCommand | undefined;
  for (let i = start; i < end; i++) {
    const raw = lines[i]!.trim();
    if (raw.startsWith("```")) {
      inSh = !inSh && raw === "```sh";
      continue;
    }
    if (!inSh || raw === "" || raw.startsWith("#")) continue;
    if (pending) pending.text += ` ${raw.replace(/\\$/, "").trim()}`;
    else pending = { line: i + 1, text: raw.replace(/\\$/, "").trim() };
    if (!raw.endsWith("\\")) {
      commands.push(pending);
      pending = undefined;
    }
  }
  return commands;
}

function run(command: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", command], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe("the README's tour, as written", () => {
  let dataDir: string;
  let dev: DevServer;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "tributary-tour-"));
    dev = await startDev({ dataDir, processes: 2 });
  });

  afterAll(async () => {
    await dev?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("runs every command of the tour without an error", { timeout: 1_200_000 }, async () => {
    const commands = tourCommands(await readFile(path.join(ROOT, "README.md"), "utf8"));
    expect(commands.length).toBeGreaterThan(20);
    const env = { ...process.env, NO_COLOR: "1", DATABASE_URL: "", TRIBUTARY_URL: dev.url };
    // `<run-id>` stands for the run the tour made last: the last run id a command printed.
    let lastRunId: string | undefined;
    for (const command of commands) {
      let text = command.text
        .replaceAll("npx tributary", `node ${BIN}`)
        .replace(/\b(localhost|127\.0\.0\.1):3000\b/g, `127.0.0.1:${dev.port}`);
      if (text.includes("<run-id>")) text = text.replaceAll("<run-id>", lastRunId ?? (await latestRunId(dev.port)));
      const { code, output } = await run(text, env);
      lastRunId = [...output.matchAll(UUID)].at(-1)?.[0] ?? lastRunId;
      const where = `README.md:${command.line}: ${command.text}\n${output}`;
      expect(code, where).toBe(0);
      if (command.text.startsWith("curl")) {
        const body = JSON.parse(output) as { errors?: unknown[]; data?: unknown };
        expect(body.errors, where).toBeUndefined();
        expect(body.data, where).toBeTruthy();
      }
    }
    // The tour's own commands (reports, clears) must not make any demo asset fail: once every run started by then
    // has ended (the readers of reported partitions among them), none failed.
    const runs = async () => {
      const r = await graphqlAt<{ runs: { id: string; status: string }[] }>(dev.port, "{ runs(first: 1000) { id status } }");
      expect(r.errors).toBeUndefined();
      return r.data!.runs;
    };
    const started = new Set((await runs()).map((r) => r.id));
    const ended = await eventually(
      async () => {
        const mine = (await runs()).filter((r) => started.has(r.id));
        return mine.every((r) => r.status !== "queued" && r.status !== "running") ? mine : undefined;
      },
      600_000,
      "the runs started during the tour to end",
    );
    expect(
      ended.filter((r) => r.status === "failed"),
      `failed runs after the tour:\n${dev.output().slice(-4000)}`,
    ).toEqual([]);
  });
});

async function latestRunId(port: number): Promise<string> {
  const r = await graphqlAt<{ runs: { id: string }[] }>(port, "{ runs(first: 1) { id } }");
  const id = r.data?.runs[0]?.id;
  if (!id) throw new Error(`no run to put in place of <run-id>: ${JSON.stringify(r)}`);
  return id;
}
