/**
 * How a trigger (a serialisable description of an async wait, see sdk/triggers.ts) is checked: the built-in kinds,
 * custom kinds from the definitions, and the templates their arguments hold. The triggerer checks deferred steps'
 * and source observations' triggers with them; a worker checks poke and reschedule waits with the same code.
 */
export { checkTrigger, type CheckTriggerContext, type CheckTriggerOptions } from "./check-trigger.js";
export { renderTemplate, TEMPLATE_FIELDS } from "./render-template.js";
export { TriggerError, PERMANENT_TRIGGER_ERRORS } from "./trigger-error.js";
export { defineTriggerCheck, realmTriggerChecks, triggerCheckOf } from "./trigger-check.js";
export type { TriggerCheck, TriggerRegistry, TriggerPartition, CheckContext, CheckResult } from "./trigger-check.js";
export { builtInTriggers, type BuiltInTriggerServices } from "./built-in-triggers.js";
export { s3ClientFromEnv, type S3Env } from "./checks/s3-object-exists-check.js";
export { SQL_PAYLOAD_ROWS, type SqlConnections, type SqlQueryable } from "./checks/sql-returns-rows-check.js";
export type { MaterializedLookup } from "./checks/asset-materialized-check.js";
export { pgMaterializedLookup } from "./pg-materialized-lookup.js";
export { envSqlConnections, connectionEnvName } from "./env-sql-connections.js";
