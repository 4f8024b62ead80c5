import { appendFileSync, closeSync, mkdirSync, openSync, writeSync } from "node:fs";
import path from "node:path";
import { maskCredentials } from "../errors/index.js";

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
  /** The first write that failed while the try ran (a full disk, a removed directory): the try cannot keep its log. */
  writeError: Error | undefined;
  /** The try's secret values: masked in every line this log writes, including lines written after close(). */
  readonly redactor: Redactor;

  constructor(
    readonly file: string,
    options: { redactor?: Redactor } = {},
  ) {
    this.redactor = options.redactor ?? new Redactor();
  }

  write(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    const line = formatLogLine(new Date(), level, message, fields, this.redactor);
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
      // Said where an operator looks, with the line itself, so nothing is lost; a try that ran while its log could
      // not be written does not count as done (see StepRuntime), and runs again.
      if (!this.closed) this.writeError ??= err as Error;
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

/**
 * Appends one line to a try's log from outside the try (the parent reporting a
 * kill, a crash, a cancel). Pass the try's redactor when the caller has it; a
 * parent process usually does not (secrets are resolved in the worker), so
 * what it writes must already be redacted, as step outcomes are.
 */
export function appendStepLog(file: string, level: LogLevel, message: string, fields?: Record<string, unknown>, redactor?: Redactor): void {
  try {
    appendLogLine(file, formatLogLine(new Date(), level, message, fields, redactor));
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

/**
 * `ISO-time LEVEL message {fields}`. API and access tokens are always masked;
 * with a redactor, its secrets are too. Both in the message before newlines
 * are escaped and in the fields after they are turned into JSON, so a value
 * is caught in the form it takes in each.
 */
export function formatLogLine(at: Date, level: LogLevel, message: string, fields?: Record<string, unknown>, redactor?: Redactor): string {
  const masked = redactor ? redactor.redact(message) : maskCredentials(message);
  // One line per entry, whatever the message holds: readers split on newlines.
  const text = masked.includes("\n") || masked.includes("\r") ? masked.replace(/\r?\n|\r/g, "\\n") : masked;
  let tail = "";
  if (fields !== undefined && Object.keys(fields).length > 0) {
    const json = safeJson(fields);
    tail = ` ${redactor ? redactor.redact(json) : maskCredentials(json)}`;
  }
  return `${at.toISOString()} ${LEVEL_LABEL[level]} ${text}${tail}\n`;
}

/** What a secret value is replaced with in a log line. */
export const REDACTED = "***";

/**
 * Values shorter than this are not masked: a secret of "1" or "yes" would
 * turn every log line into asterisks and hide nothing worth hiding.
 */
export const MIN_REDACTED_LENGTH = 4;

/**
 * The secret values of one try, masked as `***` in every log line of that
 * try, and Tributary's own API and access tokens (`trb_…`, JWTs), masked
 * whatever try prints them. Each value is masked in the forms it takes when logged: as it is, JSON
 * escaped (once, and twice for JSON logged inside a JSON field) and URL
 * encoded (a password inside a connection URL). Other encodings (base64, a
 * value split across lines or fields) are not recognised. Values shorter than
 * MIN_REDACTED_LENGTH characters are ignored.
 *
 * @example
 * const redactor = new Redactor().add("hunter22");
 * redactor.redact("login with hunter22"); // → "login with ***"
 */
export class Redactor {
  private readonly values = new Set<string>();
  /** undefined: no value to mask, the fast path. Rebuilt when a value is added. */
  private pattern: RegExp | undefined;

  /** Registers a secret value; short and already known values change nothing. */
  add(value: string): this {
    if (typeof value !== "string" || value.length < MIN_REDACTED_LENGTH || this.values.has(value)) return this;
    this.values.add(value);
    this.pattern = redactionPattern(this.values);
    return this;
  }

  /** How many values are masked (those ignored as too short not counted). */
  get size(): number {
    return this.values.size;
  }

  redact(text: string): string {
    return maskCredentials(this.pattern === undefined ? text : text.replace(this.pattern, REDACTED));
  }
}

/**
 * `text` with every occurrence of each value (in the forms Redactor lists)
 * replaced by `***`. For one-off use; a Redactor keeps the compiled pattern.
 *
 * @example
 * redactText('{"password":"pa\\"ss"}', ['pa"ss']); // → '{"password":"***"}'
 */
export function redactText(text: string, values: Iterable<string>): string {
  const pattern = redactionPattern(values);
  return pattern === undefined ? text : text.replace(pattern, REDACTED);
}

function redactionPattern(values: Iterable<string>): RegExp | undefined {
  const forms = new Set<string>();
  for (const value of values) {
    if (typeof value !== "string" || value.length < MIN_REDACTED_LENGTH) continue;
    forms.add(value);
    const once = JSON.stringify(value).slice(1, -1);
    forms.add(once);
    forms.add(JSON.stringify(once).slice(1, -1));
    const encoded = urlEncoded(value);
    if (encoded !== undefined) forms.add(encoded);
  }
  if (forms.size === 0) return undefined;
  // Longest first: a value that contains another is masked whole, not around the shorter one.
  const sorted = [...forms].sort((a, b) => b.length - a.length);
  return new RegExp(sorted.map(escapeRegExp).join("|"), "g");
}

function urlEncoded(value: string): string | undefined {
  try {
    return encodeURIComponent(value);
  } catch {
    return undefined; // a lone surrogate has no URL encoding
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
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
