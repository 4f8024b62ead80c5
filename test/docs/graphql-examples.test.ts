import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { graphqlSchema } from "../../src/api/graphql/schema.js";
import { checkExample, extractExamples, type GraphQLExample } from "./graphql-examples.js";

const schema = graphqlSchema();

// Every GraphQL example in README.md and docs/*.md, checked against the schema the server serves (built from src).
const ROOT = path.resolve(import.meta.dirname, "../..");
const FILES = [
  "README.md",
  ...readdirSync(path.join(ROOT, "docs"))
    .filter((f) => f.endsWith(".md"))
    .sort()
    .map((f) => `docs/${f}`),
];
const examples: GraphQLExample[] = FILES.flatMap((file) => extractExamples(file, readFileSync(path.join(ROOT, file), "utf8"), schema));

describe("GraphQL examples in README.md and docs/", () => {
  it("finds the examples of every kind (fenced, curl, inline documents and shorthands)", () => {
    const kinds = new Set(examples.map((e) => e.kind));
    expect([...kinds].sort()).toEqual(["curl", "fenced", "inline", "shorthand"]);
    // The tour's first command and the lineage queries, at least.
    expect(examples.some((e) => e.file === "README.md" && e.kind === "curl" && e.text.includes("assets"))).toBe(true);
    expect(examples.filter((e) => e.file === "docs/lineage.md" && e.kind === "fenced").length).toBeGreaterThanOrEqual(2);
  });

  it.each(examples.map((e) => [`${e.file}:${e.line} (${e.kind}) ${e.text.replace(/\s+/g, " ").slice(0, 60)}`, e] as const))(
    "%s is valid",
    (_name, example) => {
      const problem = checkExample(example, schema);
      expect(problem?.messages ?? [], `\n${example.text}\n`).toEqual([]);
    },
  );
});

describe("the example checker", () => {
  const check = (markdown: string) =>
    extractExamples("doc.md", markdown, schema).map((e) => [e.kind, e.line, checkExample(e, schema)?.messages ?? []]);

  it("names the file, the line and the validation error", () => {
    const markdown = [
      "# Title",
      "",
      "```graphql",
      "{",
      '  asset(key: "a") { partitionStatus { counts } }',
      "}",
      "```",
      "",
      "Shorthand: `asset(key) { paused pausedAt partitions(from, to) { nodes { key status staleReasons } } }`.",
      "",
      "```sh",
      "curl -s localhost:3000/graphql -H 'content-type: application/json' \\",
      '  -d \'{"query":"{ assets { nope } }"}\'',
      "```",
    ].join("\n");
    expect(check(markdown)).toEqual([
      [
        "fenced",
        4,
        ['doc.md:5: Field "counts" of type "PartitionStatusCounts" must have a selection of subfields. Did you mean "counts { ... }"?'],
      ],
      [
        "shorthand",
        9,
        [
          'doc.md:9: Field "staleReasons" of type "[StaleReason!]" must have a selection of subfields. Did you mean "staleReasons { ... }"? (as a selection on Query)',
        ],
      ],
      ["curl", 12, ['doc.md:12: Cannot query field "nope" on type "Asset".']],
    ]);
  });

  it("accepts valid forms: elisions, argument names, documents inline; leaves other code spans alone", () => {
    const markdown = [
      "`asset(key) { paused … partitionStatus { counts {…} ranges { status from to count } } }`",
      "`{ definitionErrors { path message } }` and `partitionStatus { counts { __typename } }`",
      "`{ observedAt, payload }`, `onCron(cron, { timezone })`, `tributary_steps{state}`, `launchRun(input)`",
    ].join("\n");
    expect(check(markdown)).toEqual([
      ["shorthand", 1, []],
      ["inline", 2, []],
      ["shorthand", 2, []],
    ]);
  });

  it("rejects an argument the field does not take, and a curl body that is not JSON", () => {
    const markdown = ["`run(runId) { status }`", "", "```bash", "curl localhost:3000/graphql -d '{query: 1}'", "```"].join("\n");
    const [shorthand, curl] = check(markdown);
    expect(shorthand![2]).toEqual([expect.stringMatching(/^doc\.md:1: Unknown argument "runId" on field "Query\.run"\./)]);
    expect(curl![2]).toEqual([expect.stringMatching(/^doc\.md:4: the curl body is not JSON/)]);
  });
});
