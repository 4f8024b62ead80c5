import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { FileLoadResult, LoadDefinitionsResult } from "../../src/loader/index.js";

const made: string[] = [];

/** Writes definitions files into a fresh directory under the system temp dir (outside this package). */
export async function definitionsDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), "tributary-defs-"));
  made.push(dir);
  await writeFiles(dir, files);
  return dir;
}

export async function writeFiles(dir: string, files: Record<string, string>): Promise<void> {
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), text);
  }
}

export async function removeDefinitionsDirs(): Promise<void> {
  await Promise.all(made.splice(0).map((d) => rm(d, { recursive: true, force: true })));
}

export function fileResult(result: LoadDefinitionsResult, file: string): FileLoadResult {
  const r = result.files.find((f) => f.file === file);
  if (!r) throw new Error(`no result for ${file}; have ${result.files.map((f) => f.file).join(", ")}`);
  return r;
}

/** A definitions file with one valid daily asset. */
export function dailyAsset(key: string, deps = ""): string {
  return `import { asset, daily, dep } from "tributary";
export const a = asset({ key: ${JSON.stringify(key)}, partitions: daily({ start: "2025-01-01" })${deps ? `, deps: { ${deps} }` : ""} }, async () => 1);
`;
}
