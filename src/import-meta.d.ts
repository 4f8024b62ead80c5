// What precompiled code knows about itself (scripts/build-cli.mjs compiles the CLI and its child processes into
// dist/cli). In the compiled files every module's `import.meta.url` is still the URL of its source file, so paths
// found relative to it are the same either way.
interface ImportMeta {
  /** The URL of the directory of the compiled files (dist/cli/) in precompiled code; undefined in the sources. */
  readonly precompiled?: string;
}
