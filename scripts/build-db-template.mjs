#!/usr/bin/env node
// Builds the template of the embedded database into dist/db-template: a PGlite database with every migration
// applied, which a new data directory is copied from instead of initialising a database (several seconds). `npm ci`
// (prepare) and `npm test` run it; it does nothing when the template there is current. Without it, or with one
// built from other migrations, everything works as before, only a first start is slower.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { tsImport } from "tsx/esm/api";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

const started = performance.now();
/** @type {typeof import("../src/storage/index.ts")} */
const storage = await tsImport("../src/storage/index.ts", import.meta.url);
const template = storage.PACKAGE_PGLITE_TEMPLATE;
const where = path.relative(ROOT, template);
const check = await storage.checkPgliteTemplate(template);
if (check.usable) {
  process.stderr.write(`build-db-template: ${where} is current\n`);
} else {
  await storage.buildPgliteTemplate(template);
  const ms = Math.round(performance.now() - started);
  process.stderr.write(`build-db-template: built ${where} in ${ms} ms\n`);
}
