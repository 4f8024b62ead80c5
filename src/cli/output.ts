import pc from "picocolors";
import { formatLocation, serializeError, TributaryError } from "../errors/index.js";

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints an error for people (or as JSON) and returns the exit code to use. */
export function reportError(err: unknown, json: boolean): number {
  if (json) {
    process.stdout.write(`${JSON.stringify({ ok: false, error: serializeError(err) }, null, 2)}\n`);
  } else if (err instanceof TributaryError) {
    process.stderr.write(`${pc.red("error")} ${pc.dim(`[${err.code}]`)} ${err.message}\n`);
    // The location is printed only when the message does not already name it.
    const values = Object.values(err.location ?? {}).filter((v): v is string => typeof v === "string" && v !== "");
    if (values.some((v) => !err.message.includes(v))) process.stderr.write(`  at ${formatLocation(err.location)}\n`);
  } else {
    process.stderr.write(`${pc.red("error")} ${(err as Error)?.stack ?? String(err)}\n`);
  }
  return err instanceof TributaryError ? 1 : 2;
}

/** A fixed-width text table. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join("  ").trimEnd();
  return [pc.bold(line(headers)), ...rows.map(line)].join("\n");
}
