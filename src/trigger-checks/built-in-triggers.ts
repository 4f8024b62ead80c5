import type { S3Client } from "@aws-sdk/client-s3";
import { assetMaterializedCheck, type MaterializedLookup } from "./checks/asset-materialized-check.js";
import { atCheck } from "./checks/at-check.js";
import { fileExistsCheck } from "./checks/file-exists-check.js";
import { httpOkCheck } from "./checks/http-ok-check.js";
import { s3ClientFromEnv, s3ObjectExistsCheck, type S3Env } from "./checks/s3-object-exists-check.js";
import { sqlReturnsRowsCheck, type SqlConnections } from "./checks/sql-returns-rows-check.js";
import type { TriggerRegistry } from "./trigger-check.js";
import { TriggerError } from "./trigger-error.js";

export interface BuiltInTriggerServices {
  /** Named connections for sqlReturnsRows (default: none configured). */
  readonly connections?: SqlConnections;
  /** Lookup for assetMaterialized; `pgMaterializedLookup(db)` reads partition_status. Without it those triggers fail clearly. */
  readonly materialized?: MaterializedLookup;
  /** The S3 client for s3ObjectExists (default: built from `env` on first use). */
  readonly s3Client?: () => S3Client | Promise<S3Client>;
  /** Environment for the default S3 client (default: process.env). */
  readonly env?: S3Env;
}

/**
 * The trigger kinds the SDK declares (sdk/triggers.ts), keyed by kind, with
 * the services they read from injected. Spread it with user-defined checks to
 * extend the registry.
 *
 * @example
 * import type { Kysely } from "kysely";
 * import type { Database } from "../storage/index.js";
 * // given db: Kysely<Database>, myCheck: TriggerCheck
 * const registry = { ...builtInTriggers({ materialized: pgMaterializedLookup(db) }), myKind: myCheck };
 */
export function builtInTriggers(services: BuiltInTriggerServices = {}): TriggerRegistry {
  const env = services.env ?? process.env;
  return Object.freeze({
    at: atCheck,
    fileExists: fileExistsCheck,
    s3ObjectExists: s3ObjectExistsCheck(services.s3Client ?? (() => s3ClientFromEnv(env))),
    httpOk: httpOkCheck,
    sqlReturnsRows: sqlReturnsRowsCheck(services.connections ?? (() => undefined)),
    assetMaterialized: assetMaterializedCheck(
      services.materialized ??
        (() => {
          throw new TriggerError(
            "TRIGGER_SERVICE_MISSING",
            "assetMaterialized triggers need the Tributary database: pass `materialized: pgMaterializedLookup(db)` to builtInTriggers()",
          );
        }),
    ),
  });
}
