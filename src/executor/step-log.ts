import { appendFileSync, closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import path from "node:path";

export type LogLevel = "debug" | "info" | "warn" | "error";

const LEVEL_LABEL: Record<LogLevel, string> = { debug: "DEBUG", info: "INFO", warn: "WARN", error: "ERROR" };
const madeDirs = new Set<string>();

/**
 * One try's log file: one line per entry, `ISO-time LEVEL message {fields}`.
 * Every line is written synchronously, so whatever a step logged is on disk
 * even when its process is SIGKILLed a moment later. The file is opened on
 * the first line: a step that logs nothing costs no file system call.
 */
export class StepLog {
  private fd: number | undefined;
  private closed = false;

  constructor(readonly file: string) {}

  write(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    const line = formatLogLine(new Date(), level, message, fields);
    try {
      if (this.closed) {
        // Something the step started is still logging after the try ended.
        appendLogLine(this.file, line);
        return;
      }
      if (this.fd === undefined) {
        ensureDir(this.file);
        this.fd = openSync(this.file, "a");
      }
      writeSync(this.fd, line);
    } catch (err) {
      // A log that cannot be written must not fail the step; say so where an operator looks.
      process.stderr.write(`tributary: cannot write step log ${this.file}: ${(err as Error).message}\n${line}`);
    }
  }

  close(): void {
    this.closed = true;
    if (this.fd !== undefined) {
      const fd = this.fd;
      this.fd = undefined;
      try {
        closeSync(fd);
      } catch {
        // Already closed: nothing to release.
      }
    }
  }
}

/** Appends one line to a try's log from outside the try (the parent reporting a kill, a crash, a cancel). */
export function appendStepLog(file: string, level: LogLevel, message: string, fields?: Record<string, unknown>): void {
  try {
    appendLogLine(file, formatLogLine(new Date(), level, message, fields));
  } catch (err) {
    process.stderr.write(`tributary: cannot write step log ${file}: ${(err as Error).message}\n`);
  }
}

function appendLogLine(file: string, line: string): void {
  ensureDir(file);
  appendFileSync(file, line);
}

function ensureDir(file: string): void {
  const dir = path.dirname(file);
  if (madeDirs.has(dir)) return;
  mkdirSync(dir, { recursive: true });
  madeDirs.add(dir);
}

export function formatLogLine(at: Date, level: LogLevel, message: string, fields?: Record<string, unknown>): string {
  // One line per entry, whatever the message holds: readers split on newlines.
  const text = message.includes("\n") || message.includes("\r") ? message.replace(/\r?\n|\r/g, "\\n") : message;
  const tail = fields === undefined || Object.keys(fields).length === 0 ? "" : ` ${safeJson(fields)}`;
  return `${at.toISOString()} ${LEVEL_LABEL[level]} ${text}${tail}\n`;
}

/** JSON of log fields that never throws: BigInts as strings, errors as message and stack, cycles marked. */
export function safeJson(value: unknown): string {
  const seen = new WeakSet<object>();
  try {
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (v instanceof Error) return { name: v.name, message: v.message, stack: v.stack };
      if (typeof v === "object" && v !== null) {
        if (seen.has(v)) return "[Circular]";
        seen.add(v);
      }
      return v;
    });
  } catch (err) {
    return JSON.stringify({ unserializableFields: String(err) });
  }
}
