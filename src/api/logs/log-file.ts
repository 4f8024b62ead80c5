import { open } from "node:fs/promises";
import path from "node:path";
import type { StepRecord, StepTryRecord } from "../../storage/index.js";

/**
 * The file holding a try's log: its stored reference once the try has ended,
 * else where local executors write it while it runs (the layout of the
 * reconciler's dispatch builder: `<logsDir>/<run>/<step>-<try>.log`).
 * Undefined for a reference outside `logsDir`: this server never reads other
 * files (callers answer with their own error).
 */
export function tryLogFile(
  logsDir: string,
  step: Pick<StepRecord, "runId" | "id">,
  attempt: Pick<StepTryRecord, "tryNumber" | "logRef">,
): string | undefined {
  const root = path.resolve(logsDir);
  const file = path.resolve(attempt.logRef ?? path.join(root, step.runId, `${step.id}-${attempt.tryNumber}.log`));
  return file.startsWith(root + path.sep) ? file : undefined;
}

/**
 * Up to `max` bytes of a log file from `offset`, cut after the last complete
 * line when the chunk is full (never inside a character). A try that logged
 * nothing has no file: its log is empty.
 */
export async function readLogChunk(file: string, offset: number, max: number): Promise<{ content: string; next: number }> {
  let handle;
  try {
    handle = await open(file, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { content: "", next: offset };
    throw err;
  }
  try {
    const want = Math.max(0, Math.min(max, (await handle.stat()).size - offset));
    const buffer = Buffer.alloc(want);
    const { bytesRead } = want === 0 ? { bytesRead: 0 } : await handle.read(buffer, 0, want, offset);
    let end = bytesRead;
    if (bytesRead === max) {
      const lastNewline = buffer.lastIndexOf(0x0a, bytesRead - 1);
      if (lastNewline >= 0) end = lastNewline + 1;
    }
    return { content: buffer.subarray(0, end).toString("utf8"), next: offset + end };
  } finally {
    await handle.close();
  }
}
