import { createRequire } from "node:module";
import { defineConfig } from "vitest/config";

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 ships CommonJS (`main`) and ESM (`module`) side by side, without an `exports` map. Node, and so
    // graphql-yoga and Pothos, load the CommonJS copy; Vite would hand our sources the ESM one. Two copies make
    // `instanceof GraphQLError` false across them and yoga masks every resolver error's `code`. One copy: Node's.
    alias: [{ find: /^graphql$/, replacement: require.resolve("graphql") }],
  },
  test: {
    pool: "forks",
    // One module registry per worker process, shared by the files it runs: each file importing the sources afresh cost
    // about a third of the CPU of the database suites. Suites restore what they change of the process (environment,
    // fault points, console).
    isolate: false,
    // Two test files at a time whatever the machine (vitest's default is one per core less one: a single file on two
    // cores). Most of a file's time is spent waiting on the processes, databases and servers it drives.
    maxWorkers: 2,
    include: ["test/**/*.test.ts"],
    // Tests wait for conditions, and a test that runs processes declares a budget per process; these are the
    // backstops for the rest, sized for a loaded 2-core machine, where starting `tributary dev` can take minutes.
    testTimeout: 180_000,
    hookTimeout: 360_000,
    globalSetup: ["test/support/global-setup.ts"],
  },
});
