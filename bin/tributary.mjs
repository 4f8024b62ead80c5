#!/usr/bin/env node
// Runs the CLI precompiled (dist/cli) when it was built from the sources as they are now, otherwise the TypeScript
// sources through tsx, so a checkout works without a build step and an edit takes effect at once.
// TRIBUTARY_RUN_SOURCES=1 runs the sources whatever dist/cli holds; TRIBUTARY_DEBUG_START=1 says which ran and why.
import { precompiled } from "../src/precompiled.mjs";
import { mapStacksLazily } from "../src/stack-source-maps.mjs";

const choice = precompiled();
if (process.env.TRIBUTARY_DEBUG_START === "1") {
  process.stderr.write(
    "dir" in choice
      ? "tributary: running the precompiled CLI (dist/cli)\n"
      : `tributary: running the sources through tsx: ${choice.stale}\n`,
  );
}
if ("dir" in choice) {
  // Stack traces name the sources, as they do through tsx; the source maps are read when a stack is formatted.
  mapStacksLazily(choice.dir);
  await import(new URL("main.mjs", choice.dir).href);
} else {
  const { register } = await import("tsx/esm/api");
  register();
  await import("../src/cli/main.ts");
}
