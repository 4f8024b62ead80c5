// Regenerates docs/schema.graphql from the code-first schema: npx tsx src/api/graphql/write-schema.ts
// test/api/schema-print.test.ts fails while the committed file is stale.
import { writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { schemaText } from "./schema-text.js";

const target = fileURLToPath(new URL("../../../docs/schema.graphql", import.meta.url));
await writeFile(target, schemaText());
console.log(`wrote ${target}`);
