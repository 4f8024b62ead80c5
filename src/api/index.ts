export { createApiApp } from "./app.js";
export type { ApiOptions } from "./app.js";
export { Catalog } from "./catalog.js";
export type { CatalogView } from "./catalog.js";
export type { ApiContext, DefinitionFileView } from "./graphql/builder.js";
export { listPartitions } from "./partition-listing.js";
export type { PartitionRow, PartitionListing } from "./partition-listing.js";
export { launchRun, stepSettings } from "./commands/launch-run.js";
export type { LaunchRunRequest, LaunchedRun, LaunchServices } from "./commands/launch-run.js";
