// The first module of a triggerer's trigger-kind child process, in plain JS
// because tsx is not registered yet. argv: the SDK's URL, the definitions
// directory, then the definitions files (relative to it). Registers tsx, then
// runs trigger-kind-child.ts.
if (!process.send || !process.argv[2] || !process.argv[3]) {
  process.stderr.write(
    "trigger-kind-entry: start me through TriggerKindProcess (fork with IPC, the SDK URL and the definitions directory)\n",
  );
  process.exit(2);
}
const { register } = await import("tsx/esm/api");
register();
await import("./trigger-kind-child.ts");
