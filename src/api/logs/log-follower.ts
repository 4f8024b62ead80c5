import { readLogChunk } from "./log-file.js";

/** Bytes read from the log per poll at most; a longer backlog is sent over several reads without waiting. */
const READ_BYTES = 256 * 1024;

/** How a try ended, as the follower's last event carries it. */
export interface TryEnd {
  readonly tryNumber: number;
  readonly state: string;
  readonly endedAt: string | null;
  readonly error: unknown;
}

export interface FollowOptions {
  /** Byte offset to start from (0, or the id of the last event a reconnecting client saw). */
  readonly from: number;
  /** Aborts the follower (the client went away): no read or timer outlives it. */
  readonly signal: AbortSignal;
  /** The try's end, or undefined while it still runs. */
  readonly ended: () => Promise<TryEnd | undefined>;
  /** Receives each complete line (without its newline) and the byte offset just after it. */
  readonly onLine: (line: string, next: number) => Promise<void>;
  /** How often the file is read for new lines. */
  readonly pollMs: number;
  /** How often the try's state is read (a database query, so less often than the file). */
  readonly statePollMs: number;
  /**
   * Subscribes to wake-ups (the database's NOTIFY of finished steps): each one
   * makes the state read due at once, at most every {@link MIN_WAKE_GAP_MS}.
   * Returns the unsubscribe. Notifications can be lost, so `statePollMs` still
   * bounds how late an end is seen.
   */
  readonly subscribe?: (wake: () => void) => Promise<() => Promise<void>>;
}

/** Least time between two state reads caused by wake-ups (a busy database notifies often). */
export const MIN_WAKE_GAP_MS = 100;

/**
 * Sends a log's lines from `from`, then follows the file while the try runs:
 * each poll reads only what was appended since the last byte sent. Returns the
 * try's end once it has ended and the file is drained (the state is read
 * before the last drain, so every line written before the try ended is sent),
 * or undefined when aborted first.
 */
export async function followLog(file: string, options: FollowOptions): Promise<TryEnd | undefined> {
  let offset = options.from;
  let nextStateCheck = 0;
  let lastStateCheck = Number.NEGATIVE_INFINITY;
  let woken = false;
  let interrupt: (() => void) | undefined;
  const unsubscribe = await options.subscribe?.(() => {
    woken = true;
    interrupt?.();
  });
  try {
    while (!options.signal.aborted) {
      let end: TryEnd | undefined;
      const now = Date.now();
      if (now >= nextStateCheck || (woken && now >= lastStateCheck + MIN_WAKE_GAP_MS)) {
        woken = false;
        end = await options.ended();
        lastStateCheck = Date.now();
        nextStateCheck = lastStateCheck + options.statePollMs;
      }
      offset = await sendLines(file, offset, end !== undefined, options);
      if (end) return options.signal.aborted ? undefined : end;
      await pause(options.pollMs, options.signal, (cut) => (interrupt = cut));
    }
    return undefined;
  } finally {
    await unsubscribe?.();
  }
}

/**
 * Sends the complete lines from `offset` up to the end of the file; with
 * `final`, also a last line without its newline. Returns the new offset.
 */
async function sendLines(file: string, from: number, final: boolean, options: FollowOptions): Promise<number> {
  let offset = from;
  for (;;) {
    const { content, next } = await readLogChunk(file, offset, READ_BYTES);
    const cut = content.lastIndexOf("\n") + 1;
    // A partial last line waits for the rest, unless the try has ended or the line alone fills a whole read.
    const text = final || (cut === 0 && next - offset === READ_BYTES) ? content : content.slice(0, cut);
    if (text === "") return offset;
    const lines = text.split("\n");
    const endsWithNewline = lines.at(-1) === "";
    if (endsWithNewline) lines.pop();
    for (const [i, line] of lines.entries()) {
      if (options.signal.aborted) return offset;
      offset += Buffer.byteLength(line) + (endsWithNewline || i < lines.length - 1 ? 1 : 0);
      await options.onLine(line.replace(/\r$/, ""), offset);
    }
  }
}

/**
 * Waits `ms`, or less when the signal aborts or the function handed to
 * `interruptible` is called; the timer never outlives the wait.
 */
function pause(ms: number, signal: AbortSignal, interruptible: (cut: (() => void) | undefined) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      interruptible(undefined);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    interruptible(done);
  });
}
