import { runCli } from "./program.js";

await runCli(process.argv);
