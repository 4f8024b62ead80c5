import pc from "picocolors";
import { formatLocation, serializeError, TributaryError, type SerializedError } from "../errors/index.js";

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints an error for people (or as JSON, stack traces only with --verbose) and returns the exit code to use. */
export function reportError(err: unknown, options: { json: boolean; verbose?: boolean }): number {
  if (options.json) {
    const error = options.verbose ? serializeError(err) : withoutStacks(serializeError(err));
    process.stdout.write(`${JSON.stringify({ ok: false, error }, null, 2)}\n`);
  } else if (err instanceof TributaryError) {
    process.stderr.write(`${pc.red("error")} ${pc.dim(`[${err.code}]`)} ${err.message}\n`);
    // The location is printed only when the message does not already name it.
    const values = Object.values(err.location ?? {}).filter((v): v is string => typeof v === "string" && v !== "");
    if (values.some((v) => !err.message.includes(v))) process.stderr.write(`  at ${formatLocation(err.location)}\n`);
    if (options.verbose && err.stack) process.stderr.write(`${pc.dim(err.stack)}\n`);
  } else {
    process.stderr.write(`${pc.red("error")} ${(err as Error)?.stack ?? String(err)}\n`);
  }
  return err instanceof TributaryError ? 1 : 2;
}

function withoutStacks(error: SerializedError): SerializedError {
  const { stack: _stack, cause, ...rest } = error;
  return cause ? { ...rest, cause: withoutStacks(cause) } : rest;
}

/**
 * A closed stdout or stderr (the reader of a pipe went away: `| head`) ends
 * the command quietly when `exit()` says so, instead of an EPIPE crash; else
 * the output is dropped and the process carries on.
 */
export function exitOnClosedPipe(exit: () => boolean): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (err.code !== "EPIPE") throw err;
      if (exit()) process.exit(process.exitCode ?? 0);
    });
  }
}

/** A fixed-width text table. */
export function table(headers: string[], rows: string[][]): string {
  // Colour codes take no room on screen: measure without them.
  // eslint-disable-next-line no-control-regex -- matches the ESC that starts an ANSI colour code
  const visible = (s: string) => s.replace(/\u001b\[[0-9;]*m/g, "").length;
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => visible(r[i] ?? ""))));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c + " ".repeat(Math.max(0, (widths[i] ?? 0) - visible(c))))
      .join("  ")
      .trimEnd();
  return [pc.bold(line(headers)), ...rows.map(line)].join("\n");
}
