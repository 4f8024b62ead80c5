import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { newApiToken } from "../../src/access/index.js";
import { describePostgres, useTestDatabase } from "../support/pg.js";
import { cliBudget, runCli } from "./run-cli.js";

// An API token a step prints (in ctx.log, in log fields, on the console) or quotes in its error is masked like a
// secret: in the try's log file, in the error stored with the step, and in what the command prints.
const DEFS = `
import { asset } from "tributary";
const token = process.env.LEAKED_TOKEN;
export const chatty = asset({ key: "leak/chatty" }, async (ctx) => {
  ctx.log.info("calling the API with Authorization: Bearer " + token);
  ctx.log.info("request headers", { authorization: "Bearer " + token });
  console.log("the token is", token);
  return 1;
});
export const failing = asset({ key: "leak/failing" }, async () => {
  throw new Error("the server refused " + token + " (401)");
});
`;

describePostgres("API tokens in step logs and errors", () => {
  const database = useTestDatabase();
  let root: string;
  let logsDir: string;
  let defsDir: string;
  const { token } = newApiToken();

  beforeAll(async () => {
    root = await mkdtemp(path.join(tmpdir(), "tributary-token-redaction-"));
    logsDir = path.join(root, "logs");
    defsDir = path.join(root, "defs");
    await mkdir(defsDir);
    await writeFile(path.join(defsDir, "leak.ts"), DEFS);
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it(
    "masks a token a real asset logs or throws, wherever it would be written",
    async () => {
      const r = await runCli(
        ["materialize", "leak/chatty", "leak/failing", "--wait", "--json", "--definitions", defsDir, "--url", "http://127.0.0.1:9"],
        {
          env: { DATABASE_URL: database.url, TRIBUTARY_LOGS_DIR: logsDir, LEAKED_TOKEN: token },
        },
      );
      // The failing asset fails the run: exit code 1, and the command's output carries no token either.
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout + r.stderr).not.toContain(token);

      const logs = await allLogs(logsDir);
      expect(logs).toContain("calling the API with Authorization: Bearer ***");
      expect(logs).toContain('request headers {"authorization":"Bearer ***"}');
      expect(logs).toContain("the token is ***");
      expect(logs).toContain("the server refused *** (401)");
      expect(logs).not.toContain(token);

      const { rows } = await sql<{ asset_key: string; error: unknown }>`
        select asset_key, error from steps where asset_key = 'leak/failing'`.execute(database.db);
      expect(rows).toHaveLength(1);
      const stored = JSON.stringify(rows[0]!.error);
      expect(stored).toContain("the server refused *** (401)");
      expect(stored).not.toContain(token);
    },
    cliBudget(1),
  );
});

/** Every try log under the logs directory, concatenated. */
async function allLogs(dir: string): Promise<string> {
  const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((f) => f.isFile());
  const texts = await Promise.all(files.map((f) => readFile(path.join(f.parentPath, f.name), "utf8")));
  return texts.join("");
}
