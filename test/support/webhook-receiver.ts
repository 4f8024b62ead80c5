import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: unknown;
  /** The status the receiver answered with. */
  readonly status: number;
}

/**
 * A real HTTP server on 127.0.0.1 that records every request (JSON bodies
 * parsed) and answers with `respond(n)` for the n-th request (0-based;
 * default 200).
 */
export class WebhookReceiver {
  readonly requests: ReceivedRequest[] = [];
  respond: (index: number, body: unknown) => number = () => 200;
  private constructor(private readonly server: Server) {}

  static async start(): Promise<WebhookReceiver> {
    let receiver!: WebhookReceiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // Not JSON: keep the text.
        }
        const status = receiver.respond(receiver.requests.length, body);
        receiver.requests.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, status });
        res.writeHead(status, { "content-type": "text/plain" });
        res.end(status < 300 ? "ok" : "receiver says no");
      });
    });
    receiver = new WebhookReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return receiver;
  }

  url(path = "/hook"): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}${path}`;
  }

  /** Requests the receiver accepted (2xx). */
  get accepted(): ReceivedRequest[] {
    return this.requests.filter((r) => r.status < 300);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
