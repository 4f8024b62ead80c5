// The API's pure views and checks of its inputs on their own: command-line clients format what a server answered
// with them, without loading the GraphQL and HTTP servers.
export { formatKeyRanges, MAX_EVALUATIONS_LIMIT } from "../commands/automation-evaluations.js";
export { checkLineageDepth } from "../lineage/lineage.js";
export { failedPartitionRanges } from "../commands/launch-backfill.js";
export { listPartitions, staleReasonView } from "../partition-listing.js";
export type { PartitionRow, StaleReasonView } from "../partition-listing.js";
