// The first module of a LocalExecutor worker child process, in plain JS
// because tsx is not registered yet. argv: the SDK's URL, then optionally the
// definitions directory. Registers tsx, then runs worker-child.ts.
if (!process.send || !process.argv[2]) {
  process.stderr.write("worker-entry: start me through LocalExecutor (fork with IPC and the SDK URL)\n");
  process.exit(2);
}
const { register } = await import("tsx/esm/api");
register();
await import("./worker-child.ts");
