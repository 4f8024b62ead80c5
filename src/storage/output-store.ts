import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { StorageError } from "../errors/index.js";

/** Outputs up to this size live in the metadata database; larger ones in an OutputStore. */
export const INLINE_OUTPUT_LIMIT_BYTES = 48 * 1024;

/** Where outputs too large for the database go: a directory (below) or a bucket (S3OutputStore). */
export interface OutputStore {
  readonly description: string;
  /** Stores an immutable object under `key` and returns its reference. */
  put(key: string, body: string): Promise<string>;
  get(ref: string): Promise<string>;
  /** Stores an immutable binary object (e.g. a gzip archive) under `key` and returns its reference. */
  putBytes(key: string, body: Uint8Array, contentType: string): Promise<string>;
  /** The bytes of an object stored with putBytes (or put). */
  getBytes(ref: string): Promise<Uint8Array>;
  /** Deletes the object; one that is already gone is no error. */
  delete(ref: string): Promise<void>;
}

/** Outputs as files under a directory: the embedded mode's object store. */
export class LocalDirOutputStore implements OutputStore {
  readonly description: string;

  private readonly dir: string;

  constructor(dir: string) {
    this.dir = path.resolve(dir);
    this.description = `directory ${this.dir}`;
  }

  put(key: string, body: string): Promise<string> {
    return this.write(key, body);
  }

  /** A file keeps no content type: whoever reads it back knows what it stored. */
  putBytes(key: string, body: Uint8Array, _contentType: string): Promise<string> {
    return this.write(key, body);
  }

  get(ref: string): Promise<string> {
    return this.read(ref, (file) => readFile(file, "utf8"));
  }

  getBytes(ref: string): Promise<Uint8Array> {
    return this.read(ref, (file) => readFile(file));
  }

  async delete(ref: string): Promise<void> {
    // Only files of this directory: a reference is data in the database, and deleting is not reading.
    const file = ref.startsWith("file://") ? path.resolve(ref.slice("file://".length)) : undefined;
    if (file === undefined || !file.startsWith(this.dir + path.sep)) {
      throw new StorageError("OUTPUT_REF_INVALID", `output reference "${ref}" is not a file of ${this.description}: not deleted`);
    }
    try {
      await rm(file, { force: true });
    } catch (cause) {
      throw new StorageError(
        "OUTPUT_STORE_FAILED",
        `output ${ref} cannot be deleted from ${this.description}: ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
  }

  private async write(key: string, body: string | Uint8Array): Promise<string> {
    const file = this.fileOf(key);
    await mkdir(path.dirname(file), { recursive: true });
    // Write then rename, so a reader never sees half an object.
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, body);
    await rename(tmp, file);
    return `file://${file}`;
  }

  private async read<T>(ref: string, readFileAs: (file: string) => Promise<T>): Promise<T> {
    if (!ref.startsWith("file://")) {
      throw new StorageError("OUTPUT_REF_INVALID", `output reference "${ref}" is not a file:// reference of ${this.description}`);
    }
    const file = ref.slice("file://".length);
    try {
      return await readFileAs(file);
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") {
        throw new StorageError(
          "OUTPUT_NOT_FOUND",
          `output ${ref} not found: there is no file ${file}; check that nothing deleted it and that ${this.description} is where it was written`,
          { cause },
        );
      }
      throw new StorageError("OUTPUT_STORE_FAILED", `output ${ref} cannot be read from ${this.description}: ${(cause as Error).message}`, {
        cause,
      });
    }
  }

  private fileOf(key: string): string {
    const safe = key.split("/").map((s) => s.replace(/[^A-Za-z0-9_.=-]/g, "_") || "_");
    const file = path.join(this.dir, ...safe);
    if (!file.startsWith(path.resolve(this.dir))) throw new StorageError("OUTPUT_KEY_INVALID", `output key "${key}" escapes ${this.dir}`);
    return file;
  }
}
