// ESLint: the recommended rules, type-aware checks of promise handling, and import order.
// Formatting is Prettier's (`npm run format`); nothing here concerns layout.
import js from "@eslint/js";
import { defineConfig } from "eslint/config";
import { createNodeResolver, importX } from "eslint-plugin-import-x";
import globals from "globals";
import tseslint from "typescript-eslint";

const TS_FILES = ["**/*.ts", "**/*.tsx"];
const JS_FILES = ["**/*.js", "**/*.mjs", "**/*.cjs"];

export default defineConfig(
  // tmp/: scratch space (gitignored) where suites write definitions while the linter may be running beside them.
  { ignores: ["node_modules/", "ui/dist/", "coverage/", "dist/", ".tributary/", "tmp/"] },

  js.configs.recommended,
  tseslint.configs.recommended,

  {
    plugins: { "import-x": importX },
    settings: { "import-x/resolver-next": [createNodeResolver()] },
    rules: {
      // A variable a callback reads before it is assigned (`let worker; … () => worker?.cancel(); worker = new …`)
      // stays `let`: as a const, an early call would throw instead of seeing undefined.
      "prefer-const": ["error", { ignoreReadBeforeAssign: true }],
      // Node built-ins, then packages, then the project's own modules; the order within each group is left as written.
      "import-x/order": [
        "error",
        { groups: ["builtin", "external", "internal", ["parent", "sibling", "index"]], "newlines-between": "never" },
      ],
    },
  },

  {
    files: TS_FILES,
    languageOptions: {
      parserOptions: {
        // Each file is checked with the nearest tsconfig.json (ui/src with ui/tsconfig.json); the few config files
        // outside every tsconfig get a default project.
        projectService: { allowDefaultProject: ["vitest.nodb.config.ts", "ui/vite.config.ts"] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // A file that uses import.meta.precompiled references its declaration by path, so a project that type-checks
      // these sources through the package (its own tsconfig.json, which does not include src/) knows it too.
      "@typescript-eslint/triple-slash-reference": ["error", { path: "always", types: "prefer-import", lib: "always" }],
      // Node's test runner awaits the tests it is handed; their promises are not left floating.
      "@typescript-eslint/no-floating-promises": [
        "error",
        { allowForKnownSafeCalls: [{ from: "package", package: "node:test", name: ["test", "it", "describe", "suite"] }] },
      ],
      "@typescript-eslint/no-misused-promises": "error",
      // `Promise.all(entries.map((e) => e.shipper?.stop()))` waits for the promises there are.
      "@typescript-eslint/await-thenable": ["error", { allowMixedPromiseArrays: true }],
      "@typescript-eslint/no-unused-vars": [
        "error",
        { args: "after-used", argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrorsIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },

  {
    files: JS_FILES,
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs" },
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["ui/src/**"],
    languageOptions: { globals: { ...globals.browser } },
  },
);
