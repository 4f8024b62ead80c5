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
    include: ["test/**/*.test.ts"],
    // Tests wait for conditions, and a test that runs processes declares a budget per process; these are the
    // backstops for the rest, sized for a loaded 2-core machine, where starting `tributary dev` can take minutes.
    testTimeout: 180_000,
    hookTimeout: 360_000,
    globalSetup: ["test/support/global-setup.ts"],
  },
});
