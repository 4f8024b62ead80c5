// Imports definitions files in isolated child processes and assembles the
// snapshot. Independent of storage: it returns results; the CLI persists them.
export { loadDefinitions, loadFiles, triggerKindFiles, DEFAULT_LOAD_MEMORY_MB, DEFAULT_LOAD_TIMEOUT_MS } from "./load-definitions.js";
export type { FileLoadResult, LoadDefinitionsOptions, LoadDefinitionsResult, PreviousLoad } from "./load-definitions.js";
export { watchDefinitions } from "./watch-definitions.js";
export type { DefinitionsChange, DefinitionsWatcher, WatchDefinitionsOptions } from "./watch-definitions.js";
export { discoverDefinitionFiles, isDefinitionFile } from "./discover-files.js";
export { compiledCode, type CompiledCode } from "./compiled-code.js";
export { SDK_GLOBAL } from "./child-protocol.js";
export { checkDefinitionTypes, loadTypeScript } from "./check-definition-types.js";
export type { DefinitionTypeError, DefinitionTypesResult, TypeScriptModule } from "./check-definition-types.js";
