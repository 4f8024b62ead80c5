import { open } from "node:fs/promises";

export interface TryLogShipperOptions {
  /** How often the file is read for new bytes (default 500 ms). */
  readonly intervalMs?: number;
  /** Largest chunk sent at once (default 1 MB, the server's limit). */
  readonly maxChunkBytes?: number;
  readonly onError?: (err: Error) => void;
}

/**
 * Tails a try's local log file and sends each new run of bytes with its
 * offset in the file (the server appends a retried chunk once), every
 * `intervalMs` and once more on stop(). A failed send is retried on the next
 * tick from the same offset.
 *
 * @example
 * import type { StepDispatch } from "../execution/index.js";
 * // given dispatch: StepDispatch, post: (chunk: Uint8Array, offset: number) => Promise<void>
 * const shipper = new TryLogShipper(dispatch.logRef, (chunk, offset) => post(chunk, offset)).start();
 * // … the try runs …
 * await shipper.stop(); // sends what is left
 */
export class TryLogShipper {
  private offset = 0;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly file: string,
    private readonly send: (chunk: Uint8Array, offset: number) => Promise<void>,
    private readonly options: TryLogShipperOptions = {},
  ) {}

  /** Bytes of the file sent so far. */
  get shipped(): number {
    return this.offset;
  }

  start(): this {
    this.timer ??= setInterval(() => void this.flush().catch((err: Error) => this.options.onError?.(err)), this.options.intervalMs ?? 500);
    this.timer.unref();
    return this;
  }

  /** Sends everything written so far (one flush at a time). */
  flush(): Promise<void> {
    this.running ??= this.sendNew().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Stops the timer and sends what is left; a failure is reported to onError, not thrown. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      clearInterval(this.timer);
      await this.running?.catch(() => undefined);
      await this.flush().catch((err: Error) => this.options.onError?.(err));
    })();
    return this.stopping;
  }

  private async sendNew(): Promise<void> {
    const max = this.options.maxChunkBytes ?? 1024 * 1024;
    let handle;
    try {
      handle = await open(this.file, "r");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return; // nothing logged yet
      throw err;
    }
    try {
      for (;;) {
        const size = (await handle.stat()).size;
        if (size <= this.offset) return;
        const buffer = Buffer.alloc(Math.min(max, size - this.offset));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, this.offset);
        if (bytesRead === 0) return;
        await this.send(buffer.subarray(0, bytesRead), this.offset);
        this.offset += bytesRead;
      }
    } finally {
      await handle.close();
    }
  }
}
