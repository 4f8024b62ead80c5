/**
 * Formats every stack from now on as V8 does, with frames in the precompiled code under `dir` (and in modules whose
 * source map Node keeps) mapped to their sources, each map read the first time a stack needs it.
 */
export function mapStacksLazily(dir: URL): void;
