/// <reference path="../import-meta.d.ts" />
let registered: Promise<void> | undefined;

/**
 * Lets this process import a user's TypeScript files as they are (a definitions file of a snapshot that names no
 * code version, a secret backend module). A process running the sources was started with tsx's module hooks; a
 * precompiled one registers them the first time it imports such a file, so processes that never do (most: steps
 * run the loader's compiled files) do not pay for hooks that see every import. Call it before registering hooks of
 * our own (worker-hooks.mjs), which must run before tsx's.
 */
export function allowTypeScriptImports(): Promise<void> {
  if (!import.meta.precompiled) return Promise.resolve();
  registered ??= import("tsx/esm/api").then(({ register }) => {
    register();
  });
  return registered;
}
