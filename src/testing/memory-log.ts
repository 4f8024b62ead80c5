import { StepLog, type LogLevel } from "../executor/runtime/index.js";

/** One line a try logged (`ctx.log`, console output, the runtime's own lines), secrets masked. */
export interface LogEntry {
  readonly time: Date;
  readonly level: LogLevel;
  readonly message: string;
  readonly fields?: Readonly<Record<string, unknown>>;
}

/** A try's log kept in memory instead of a file. */
export class MemoryLog extends StepLog {
  readonly entries: LogEntry[] = [];

  constructor() {
    super("(in memory)");
  }

  override write(level: LogLevel, message: string, fields?: Record<string, unknown>): void {
    const entry: LogEntry = { time: new Date(), level, message: this.redactor.redact(String(message)) };
    this.entries.push(fields === undefined ? entry : { ...entry, fields: this.redactFields(fields) });
  }

  override close(): void {
    // Nothing to release: lines written after the try ended (its callbacks) are kept too.
  }

  private redactFields(fields: Record<string, unknown>): Record<string, unknown> {
    if (this.redactor.size === 0) return fields;
    try {
      return JSON.parse(this.redactor.redact(JSON.stringify(fields))) as Record<string, unknown>;
    } catch {
      return { fields: "(not JSON)" };
    }
  }
}
