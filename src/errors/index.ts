export {
  TributaryError,
  DefinitionError,
  PartitionError,
  LoadError,
  GraphError,
  StorageError,
  InputError,
  AuthenticationError,
  AccessDeniedError,
  UserCodeError,
  serializeError,
  formatLocation,
} from "./tributary-error.js";
export type { ErrorLocation, SerializedError } from "./tributary-error.js";
export { MASKED_CREDENTIAL, maskCredentials } from "./credential-mask.js";
export { FAILURE_CLASSES } from "./failure-class.js";
export type { FailureClass } from "./failure-class.js";
