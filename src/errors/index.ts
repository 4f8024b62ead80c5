export {
  TributaryError,
  DefinitionError,
  PartitionError,
  LoadError,
  GraphError,
  StorageError,
  InputError,
  UserCodeError,
  serializeError,
  formatLocation,
} from "./tributary-error.js";
export type { ErrorLocation, SerializedError } from "./tributary-error.js";
