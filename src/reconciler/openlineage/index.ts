// OpenLineage run and dataset events for Marquez, DataHub and other lineage consumers (see docs/openlineage.md).
export { OpenLineageTask } from "./openlineage-task.js";
export type { OpenLineageTaskOptions } from "./openlineage-task.js";
export {
  lineageEvents,
  recordEvents,
  isStepRecord,
  liveStepEvents,
  datasetEvent,
  tryRunId,
  tryKey,
  OPENLINEAGE_PRODUCER,
  OPENLINEAGE_SCHEMA_URL,
  OPENLINEAGE_DATASET_EVENT_SCHEMA_URL,
} from "./lineage-events.js";
export type {
  LineageEvent,
  LineageDatasetEvent,
  OpenLineageEvent,
  PlannedLineageEvent,
  LineageEventType,
  LineageDataset,
} from "./lineage-events.js";
export { HttpLineageSink, FileLineageSink, lineageSinkFor } from "./lineage-sink.js";
export type { LineageSink, LineageDelivery } from "./lineage-sink.js";
export { parseOpenLineageConfig, OPENLINEAGE_URL_ENV, OPENLINEAGE_FILE_ENV, OPENLINEAGE_NAMESPACE_ENV } from "./openlineage-config.js";
export type { OpenLineageConfig } from "./openlineage-config.js";
