// The composition root for code that embeds Tributary in its own process (benchmarks, tools): open a runtime on
// resolved settings and keep its definitions in step, as the commands do.
export { openRuntime, type Runtime, type RuntimeOptions } from "./runtime.js";
export { resolveSettings } from "./settings.js";
export { syncDefinitions } from "./definitions-sync.js";
