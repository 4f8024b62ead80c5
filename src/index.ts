// The public surface: what definitions files import from "tributary".
export * from "./sdk/index.js";
export {
  TributaryError,
  DefinitionError,
  PartitionError,
  LoadError,
  GraphError,
  StorageError,
  InputError,
  UserCodeError,
} from "./errors/index.js";
export type { TimeWindow, PartitionsSpec, PartitionMappingSpec } from "./partitions/index.js";
