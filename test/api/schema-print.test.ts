import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SCHEMA_TEXT_COMMAND, schemaText } from "../../src/api/graphql/schema-text.js";

const committedFile = fileURLToPath(new URL("../../docs/schema.graphql", import.meta.url));

describe("docs/schema.graphql", () => {
  it("is the printed GraphQL schema", async () => {
    const committed = await readFile(committedFile, "utf8").catch(() => "(missing)");
    expect(
      schemaText(),
      `docs/schema.graphql is out of date with src/api/graphql: regenerate it with \`${SCHEMA_TEXT_COMMAND}\` and review the diff`,
    ).toBe(committed);
  });

  it("lists the public entry points, sorted", () => {
    const text = schemaText();
    const queryFields = [...(text.match(/^type Query \{\n([\s\S]*?)\n\}/m)?.[1] ?? "").matchAll(/^ {2}(\w+)[(:]/gm)].map((m) => m[1]!);
    expect(queryFields).toEqual([...queryFields].sort());
    expect(queryFields).toEqual(
      expect.arrayContaining(["asset", "assets", "backfill", "backfills", "definitionErrors", "pools", "run", "runs"]),
    );
  });
});
