import { appendFile, mkdir, readFile, stat } from "node:fs/promises";
import path from "node:path";

/** Appends in flight per file: chunks of one try land in order, never interleaved. */
const tails = new Map<string, Promise<unknown>>();

/**
 * Appends a chunk a worker shipped to the try's log file. `offset` is where
 * the chunk starts in the worker's own file: bytes the file already has (a
 * retried POST) are skipped, so shipping is idempotent. Returns the file's
 * size after the append.
 */
export function appendShippedChunk(file: string, chunk: Uint8Array, offset: number | undefined): Promise<number> {
  const previous = tails.get(file) ?? Promise.resolve();
  const next = previous.then(
    () => appendOnce(file, chunk, offset),
    () => appendOnce(file, chunk, offset),
  );
  tails.set(file, next);
  void next
    .finally(() => {
      if (tails.get(file) === next) tails.delete(file);
    })
    .catch(() => undefined);
  return next;
}

async function appendOnce(file: string, chunk: Uint8Array, offset: number | undefined): Promise<number> {
  const size = await sizeOf(file);
  const skip = offset === undefined ? 0 : Math.max(0, size - offset);
  if (skip >= chunk.byteLength) return size;
  await mkdir(path.dirname(file), { recursive: true });
  const rest = chunk.subarray(skip);
  await appendFile(file, rest);
  return size + rest.byteLength;
}

/** The whole log of a try that ended, or undefined when it logged nothing. */
export async function readShippedLog(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

async function sizeOf(file: string): Promise<number> {
  try {
    return (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
}
