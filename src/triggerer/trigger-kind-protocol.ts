import type { SerializedError } from "../errors/index.js";
import type { CheckResult, TriggerPartition } from "../trigger-checks/index.js";

// Messages between a triggerer and its trigger-kind child process (JSON over
// the IPC channel): the child imports the definitions files and runs the
// checks of the custom trigger kinds they export.

/** Parent → child. */
export type ToKindProcess =
  | {
      readonly t: "check";
      readonly id: number;
      readonly kind: string;
      readonly args: Readonly<Record<string, unknown>>;
      readonly partition: TriggerPartition | undefined;
      /** The triggerer's clock, epoch ms. */
      readonly now: number;
    }
  /** The parent gave up on the check (timeout, stop): abort its signal. */
  | { readonly t: "abort"; readonly id: number };

/** Child → parent. */
export type FromKindProcess =
  /** The definitions are imported: the custom kinds found, and the files that failed to import. */
  | { readonly t: "ready"; readonly kinds: readonly string[]; readonly errors: readonly SerializedError[] }
  | { readonly t: "result"; readonly id: number; readonly result?: CheckResult; readonly error?: SerializedError };
