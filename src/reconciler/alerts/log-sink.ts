import type { AlertRecord } from "../../storage/index.js";
import { alertText, type AlertSink } from "./alert-sink.js";

/**
 * Writes one line per alert: to the process log by default, or to any
 * function taking a line (a stream's write, a logger).
 *
 * @example new LogSink("log", (line) => process.stderr.write(line + "\n"))
 */
export class LogSink implements AlertSink {
  readonly timeoutMs = 1_000;

  constructor(
    readonly name: string,
    private readonly write: (line: string) => void,
  ) {}

  async send(alert: AlertRecord): Promise<void> {
    const fields = [
      `kind=${alert.kind}`,
      `cause=${alert.causeKey}`,
      alert.owner ? `owner=${alert.owner}` : "",
      alert.assetKey ? `asset=${alert.assetKey}` : "",
      alert.partitionKey ? `partition=${alert.partitionKey}` : "",
      alert.runId ? `run=${alert.runId}` : "",
    ].filter(Boolean);
    // One line whatever the messages hold: readers split on newlines.
    this.write(`alert ${fields.join(" ")}: ${alertText(alert)}`.replace(/\r?\n|\r/g, "\\n"));
  }
}
