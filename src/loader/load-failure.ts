import { spawnSync } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { serializeError, TributaryError, type ErrorLocation, type SerializedError } from "../errors/index.js";

/** The definitions file a failure is about. */
export interface FileContext {
  /** The definitions directory (absolute, symlinks resolved). */
  readonly dir: string;
  /** The file being loaded (absolute). */
  readonly file: string;
  /** The same, relative to `dir`. */
  readonly relFile: string;
}

export interface FailureContext extends FileContext {
  /** The SDK instance the file used: its errors are instances of its classes. */
  readonly sdk: { readonly TributaryError: typeof TributaryError };
}

interface SourcePosition {
  /** Absolute path. */
  readonly file: string;
  readonly line: number;
  /** 1-based. */
  readonly column: number;
}

/** esbuild's first error for a file it could not compile; the position is 1-based. */
export interface CompileFailure {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly text: string;
}

/**
 * Turns a compile failure (the parse, or a local import that cannot be
 * resolved) into the error users see: LOAD_SYNTAX_ERROR or LOAD_IMPORT_ERROR,
 * with file:line:col and the offending line. A JavaScript syntax error is
 * described as node describes it. Runs in the loader.
 */
export function describeCompileFailure(failure: CompileFailure, ctx: FileContext): SerializedError {
  const importFailure = /^(?:Could not resolve|No matching export|No loader is configured)/.test(failure.text);
  const reported = { position: { file: failure.file, line: failure.line, column: failure.column }, text: failure.text };
  const { position, text } = (!importFailure && checkSyntax(failure.file)) || reported;
  const at = formatPosition(position, ctx);
  const importedBy = position.file === ctx.file ? "" : ` (imported by ${ctx.relFile})`;
  return {
    name: "LoadError",
    code: importFailure ? "LOAD_IMPORT_ERROR" : "LOAD_SYNTAX_ERROR",
    message: `${at}: ${importFailure ? "importing the file failed" : "syntax error"}: ${text}${importedBy}${codeFrame(position)}`,
    location: { file: ctx.relFile },
    cause: { name: "CompileError", code: "ERROR", message: `${at}: ${failure.text}` },
  };
}

/**
 * Turns whatever importing a compiled definitions file threw into the error
 * users see: SDK errors keep their code and gain the file, line and (when the
 * source shows it) the asset key; anything else becomes LOAD_IMPORT_ERROR with
 * the original message and stack. Positions come from the stack, which source
 * maps point at the definitions sources. Runs in the child process.
 */
export function describeLoadFailure(err: unknown, ctx: FailureContext): SerializedError {
  if (err instanceof ctx.sdk.TributaryError || err instanceof TributaryError) return describeDefinitionError(err, ctx);
  const e = err instanceof Error ? err : undefined;
  const frame = e ? userFrame(e.stack, ctx) : undefined;
  const original = e ? `${e.name}: ${e.message}` : `a non-Error value: ${safeString(err)}`;
  const out: SerializedError = {
    name: "LoadError",
    code: "LOAD_IMPORT_ERROR",
    message:
      `${frame ? formatPosition(frame, ctx) : ctx.relFile}: importing the file threw ${original}` +
      (frame && frame.file !== ctx.file ? ` (while importing ${ctx.relFile})` : "") +
      // With a frame in user code, the file's own top-level code threw; without, resolving or linking failed.
      (frame ? "; definitions files run when loaded, so fix or guard the code that runs at import time" : ""),
    location: { file: ctx.relFile },
    cause: serializeError(err),
  };
  if (e?.stack) out.stack = e.stack;
  return out;
}

function describeDefinitionError(err: TributaryError, ctx: FailureContext): SerializedError {
  const frame = userFrame(err.stack, ctx);
  const location: ErrorLocation = { ...err.location, file: ctx.relFile };
  let message = err.message;
  if (!location.assetKey && frame) {
    const key = assetKeyNear(frame);
    if (key) {
      location.assetKey = key;
      message = `asset "${key}": ${message}`;
    }
  }
  const where = frame ? formatPosition(frame, ctx) : ctx.relFile;
  const out: SerializedError = {
    // The error's own serialiser: it may come from another instance of the errors module.
    ...err.toJSON(),
    message: `${where}: ${message}${frame && frame.file !== ctx.file ? ` (while importing ${ctx.relFile})` : ""}`,
    location,
  };
  return out;
}

/**
 * Runs `node --check` on a copy named .mjs (parsed as an ES module, as the
 * loader imports it) for the position and message of a JavaScript syntax
 * error; undefined when the file parses or is not JavaScript.
 */
function checkSyntax(file: string): { position: SourcePosition; text: string } | undefined {
  if (!/\.m?js$/.test(file)) return undefined;
  const tmp = mkdtempSync(path.join(tmpdir(), "tributary-check-"));
  try {
    const copy = path.join(tmp, "check.mjs");
    copyFileSync(file, copy);
    const result = spawnSync(process.execPath, ["--check", copy], { encoding: "utf8", timeout: 10_000 });
    if (result.status === 0) return undefined;
    const lines = (result.stderr ?? "").split("\n");
    const head = lines.findIndex((l) => l.startsWith(copy) || l.startsWith(`file://${copy}`));
    const lineNo = head >= 0 ? /:(\d+)$/.exec(lines[head]!)?.[1] : undefined;
    if (!lineNo) return undefined;
    const caret = lines[head + 2]?.indexOf("^") ?? -1;
    const text = lines.find((l) => l.startsWith("SyntaxError: "))?.slice("SyntaxError: ".length) ?? "the file cannot be parsed";
    return { position: { file, line: Number(lineNo), column: caret >= 0 ? caret + 1 : 0 }, text };
  } catch {
    return undefined;
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/** The first stack frame in a file under the definitions directory, preferring the imported file. */
function userFrame(stack: string | undefined, ctx: FileContext): SourcePosition | undefined {
  const frames: SourcePosition[] = [];
  for (const line of (stack ?? "").split("\n").slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^():]+|[A-Za-z]:\\[^():]+):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m) continue;
    const file = m[1]!.startsWith("file://") ? fileURLToPath(m[1]!) : m[1]!;
    if (file.includes(`${path.sep}node_modules${path.sep}`)) continue;
    if (!isInside(file, ctx.dir)) continue;
    frames.push({ file, line: Number(m[2]), column: Number(m[3]) });
  }
  return frames.find((f) => f.file === ctx.file) ?? frames[0];
}

function isInside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel);
}

function formatPosition(p: SourcePosition, ctx: FileContext): string {
  const rel = isInside(p.file, ctx.dir) ? path.relative(ctx.dir, p.file).split(path.sep).join("/") : p.file;
  return p.line > 0 ? `${rel}:${p.line}:${p.column}` : rel;
}

function codeFrame(p: SourcePosition): string {
  if (p.line <= 0) return "";
  try {
    const text = readFileSync(p.file, "utf8").split("\n")[p.line - 1];
    if (text === undefined || text.length > 300) return "";
    const gutter = String(p.line);
    const pad = " ".repeat(gutter.length);
    const caret = p.column > 0 ? `\n  ${pad} | ${" ".repeat(p.column - 1)}^` : "";
    return `\n  ${gutter} | ${text}${caret}`;
  } catch {
    return "";
  }
}

/**
 * The asset key of the top-level statement around a source line, when it
 * shows exactly one `key: "…"`: a partitions definition or cron written
 * inline in asset({...}) fails before asset() knows its key, but the source
 * still says which asset it belongs to.
 */
export function assetKeyNear(p: SourcePosition): string | undefined {
  let lines: string[];
  try {
    lines = readFileSync(p.file, "utf8").split("\n");
  } catch {
    return undefined;
  }
  const isTopLevel = (i: number): boolean => /^\S/.test(lines[i] ?? "") && !/^[)}\]]/.test(lines[i] ?? "");
  let start = Math.min(Math.max(p.line - 1, 0), lines.length - 1);
  while (start > 0 && !isTopLevel(start)) start--;
  let end = Math.max(p.line, start + 1);
  while (end < lines.length && !isTopLevel(end)) end++;
  const keys = new Set<string>();
  for (const m of lines
    .slice(start, end)
    .join("\n")
    .matchAll(/\bkey\s*:\s*(["'`])([^"'`\n]+)\1/g))
    keys.add(m[2]!);
  return keys.size === 1 ? [...keys][0] : undefined;
}

function safeString(value: unknown): string {
  try {
    return typeof value === "string" ? JSON.stringify(value) : String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
