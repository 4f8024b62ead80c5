// The first module of a definitions child process, in plain JS because tsx is
// not registered yet. argv: the definitions directory, the SDK's URL.
//
// A bundled SDK (see sdk-bundle.ts) is imported here, before any module hooks
// exist: through hooks, each of its modules and those of its dependencies
// (zod alone has hundreds) would cost a round trip to the hooks thread, which
// more than doubles a child's start-up. Definitions files later import the
// same URL and get this instance.
const sdkUrl = process.argv[3];
if (!process.send || !sdkUrl) {
  process.stderr.write("child-entry: start me through the definitions loader (fork with IPC, directory and SDK URL)\n");
  process.exit(2);
}
if (sdkUrl.endsWith(".mjs")) await import(sdkUrl);
const { register } = await import("tsx/esm/api");
register();
await import("./load-child.ts");
