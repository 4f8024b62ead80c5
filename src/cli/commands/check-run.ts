import pc from "picocolors";
import { loadDefinitions } from "../../loader/index.js";
import { formatLocation } from "../../errors/index.js";
import { problemsOfFiles } from "../definitions-sync.js";
import { printJson, table } from "../output.js";
import { resolveSettings, type GlobalOptions } from "../settings.js";

export async function runCheck(opts: { json?: boolean }, globals: GlobalOptions): Promise<void> {
  const settings = resolveSettings(globals);
  const started = performance.now();
  const result = await loadDefinitions({ dir: settings.definitionsDir, timeoutMs: settings.loadTimeoutMs });
  const totalMs = Math.round(performance.now() - started);
  const fileErrors = result.files.filter((f) => f.status === "error");
  // With no previous load to say which definition of a duplicated key came first, every one of them is in error.
  const problemsByFile = problemsOfFiles(result.problems);
  const statusOf = (f: (typeof result.files)[number]) => (f.status === "ok" && problemsByFile.has(f.file) ? "error" : f.status);
  const ok = fileErrors.length === 0 && result.problems.length === 0;
  if (opts.json) {
    printJson({
      ok,
      definitionsDir: settings.definitionsDir,
      contentHash: result.contentHash,
      totalMs,
      assets: result.snapshot.assets.map((a) => ({ key: a.key, kind: a.kind, group: a.group, file: a.file, partitions: a.partitions })),
      checks: result.snapshot.checks.map((c) => ({ assetKey: c.assetKey, name: c.name, file: c.file })),
      files: result.files.map((f) => ({
        file: f.file,
        status: statusOf(f),
        loadMs: Math.round(f.loadMs),
        assets: f.assets.map((a) => a.key),
        warnings: f.warnings,
        error: f.error ?? null,
      })),
      problems: result.problems,
    });
  } else {
    process.stdout.write(
      `${table(
        ["file", "status", "load ms", "assets"],
        result.files.map((f) => [
          f.file,
          statusOf(f) === "ok" ? pc.green("ok") : pc.red("error"),
          String(Math.round(f.loadMs)),
          f.assets.map((a) => a.key).join(", "),
        ]),
      )}\n\n`,
    );
    for (const f of result.files) {
      for (const w of f.warnings) process.stdout.write(`${pc.yellow("warning")} ${f.file}: ${w}\n`);
      if (f.error) process.stdout.write(`${pc.red("error")} ${pc.dim(`[${f.error.code}]`)} ${f.error.message}\n`);
    }
    for (const p of result.problems) {
      const where = formatLocation({ ...(p.file ? { file: p.file } : {}), ...(p.assetKey ? { assetKey: p.assetKey } : {}) });
      process.stdout.write(`${pc.red("error")} ${pc.dim(`[${p.code}]`)} ${p.message.includes(where) ? "" : `${where}: `}${p.message}\n`);
    }
    process.stdout.write(
      `${ok ? pc.green("✓") : pc.red("✗")} ${result.snapshot.assets.length} assets from ${result.files.length} files in ${totalMs} ms` +
        `${ok ? "" : `, ${fileErrors.length + result.problems.length} error(s)`}\n`,
    );
  }
  process.exitCode = ok ? 0 : 1;
}
