// Finds the GraphQL examples in Markdown and checks them against a schema.
//
// What counts as an example:
// - a fenced block whose language is `graphql`: a whole document;
// - the JSON body (`-d '…'`, `--data '…'`, `--data-raw '…'`) of a `curl` to a `/graphql` URL in a shell block: its
//   `query` is a whole document;
// - an inline code span that is a whole document: it starts with `query`, `mutation`, or `{` followed by a field of
//   Query or Mutation with its selection or arguments (`{ definitionErrors { path message } }`);
// - an inline code span that is a selection shorthand: a field of some object type, optionally with an argument list,
//   then a selection set (`asset(key) { paused pausedAt }`). In a shorthand, arguments may be named without values,
//   `…` stands for fields left out and `{…}` for a selection left out; what is written must select existing
//   fields, give every object field a selection and no scalar one.
// Inline spans of other shapes (`{ observedAt, payload }`, `onCron(cron, { timezone })`, metric names) are not
// GraphQL and are left alone.
import { createRequire } from "node:module";
import type * as GraphQL from "graphql";

// The copy of graphql the schema was built with (Pothos loads it with require).
const graphql = createRequire(import.meta.url)("graphql") as typeof GraphQL;

export type ExampleKind = "fenced" | "curl" | "inline" | "shorthand";

export interface GraphQLExample {
  readonly file: string;
  /** 1-based line of the example's first character in the file. */
  readonly line: number;
  readonly kind: ExampleKind;
  readonly text: string;
}

export interface ExampleProblem {
  readonly example: GraphQLExample;
  /** `file:line: message` for each error, the line inside the file. */
  readonly messages: string[];
}

const SHELL_LANGUAGES = new Set(["sh", "bash", "shell", "console", "zsh"]);

/** The GraphQL examples in one Markdown file. */
export function extractExamples(file: string, markdown: string, schema: GraphQL.GraphQLSchema): GraphQLExample[] {
  const lines = markdown.split("\n");
  const out: GraphQLExample[] = [];
  let fence: { marker: string; language: string; start: number; body: string[] } | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const opening = /^\s*(`{3,}|~{3,})\s*([\w-]*)/.exec(line);
    if (fence) {
      if (line.trim().startsWith(fence.marker) && line.trim().replace(/[`~]/g, "") === "") {
        if (fence.language === "graphql") out.push({ file, line: fence.start + 1, kind: "fenced", text: fence.body.join("\n") });
        else if (SHELL_LANGUAGES.has(fence.language)) out.push(...curlBodies(file, fence.start + 1, fence.body));
        fence = undefined;
      } else fence.body.push(line);
      continue;
    }
    if (opening) {
      fence = { marker: opening[1]!, language: opening[2]!.toLowerCase(), start: i + 1, body: [] };
      continue;
    }
    for (const span of line.matchAll(/(`+)([^`]+?)\1(?!`)/g)) {
      const text = span[2]!.trim();
      const kind = inlineKind(text, schema);
      if (kind) out.push({ file, line: i + 1, kind, text });
    }
  }
  return out;
}

/** `curl … /graphql … -d '<json>'` commands of a shell block, continuation lines joined. */
function curlBodies(file: string, firstLine: number, body: string[]): GraphQLExample[] {
  const out: GraphQLExample[] = [];
  for (let i = 0; i < body.length; i++) {
    if (!/\bcurl\b/.test(body[i]!)) continue;
    const start = i;
    let command = body[i]!;
    while (/\\\s*$/.test(command) && i + 1 < body.length) command = command.replace(/\\\s*$/, " ") + body[++i]!;
    if (!/\/graphql\b/.test(command)) continue;
    const data = /(?:-d|--data|--data-raw|--data-binary)\s+'([^']*)'/.exec(command);
    out.push({ file, line: firstLine + start, kind: "curl", text: data ? data[1]! : "" });
  }
  return out;
}

function inlineKind(text: string, schema: GraphQL.GraphQLSchema): ExampleKind | undefined {
  if (/^(query|mutation|subscription)\b\s*[\w({]/.test(text)) return "inline";
  const rootFields = { ...schema.getQueryType()?.getFields(), ...schema.getMutationType()?.getFields() };
  // `{ field {` or `{ field(`: a field with a selection or arguments, not an object literal such as `{ trigger }`.
  const opening = /^\{\s*([A-Za-z_]\w*)\s*[({]/.exec(text);
  if (opening) return Object.hasOwn(rootFields, opening[1]!) ? "inline" : undefined;
  const selection = /^([A-Za-z_]\w*)\s*(\([^()]*\))?\s*\{/.exec(text);
  if (selection && typesWithField(schema, selection[1]!).length > 0) return "shorthand";
  return undefined;
}

function typesWithField(schema: GraphQL.GraphQLSchema, name: string): GraphQL.GraphQLObjectType[] {
  return Object.values(schema.getTypeMap()).filter(
    (t): t is GraphQL.GraphQLObjectType => graphql.isObjectType(t) && !t.name.startsWith("__") && Object.hasOwn(t.getFields(), name),
  );
}

/** Validates one example; undefined when it is valid. */
export function checkExample(example: GraphQLExample, schema: GraphQL.GraphQLSchema): ExampleProblem | undefined {
  const at = (line: number | undefined, message: string) => `${example.file}:${example.line + (line ?? 1) - 1}: ${message}`;
  let document = example.text;
  if (example.kind === "curl") {
    let body: unknown;
    try {
      body = JSON.parse(example.text);
    } catch (err) {
      return { example, messages: [at(1, `the curl body is not JSON (${(err as Error).message}): ${example.text || "(no -d '…' body)"}`)] };
    }
    const query = (body as { query?: unknown } | null)?.query;
    if (typeof query !== "string") return { example, messages: [at(1, `the curl body has no "query" string: ${example.text}`)] };
    document = query;
  }
  if (example.kind === "shorthand") return checkShorthand(example, schema, at);
  let parsed: GraphQL.DocumentNode;
  try {
    parsed = graphql.parse(document);
  } catch (err) {
    const e = err as GraphQL.GraphQLError;
    return { example, messages: [at(lineIn(example, e.locations?.[0]?.line), e.message)] };
  }
  const errors = graphql.validate(schema, parsed);
  if (errors.length === 0) return undefined;
  return { example, messages: errors.map((e) => at(lineIn(example, e.locations?.[0]?.line), e.message)) };
}

/** Lines inside a curl body are not lines of the file: its errors point at the command. */
function lineIn(example: GraphQLExample, line: number | undefined): number | undefined {
  return example.kind === "curl" || example.kind === "inline" ? 1 : line;
}

/** Rules that a shorthand may leave out: argument values, and so required arguments. */
const SHORTHAND_RULES = () =>
  graphql.specifiedRules.filter((rule) => rule !== graphql.ProvidedRequiredArgumentsRule && rule !== graphql.NoUnusedFragmentsRule);

function checkShorthand(
  example: GraphQLExample,
  schema: GraphQL.GraphQLSchema,
  at: (line: number | undefined, message: string) => string,
): ExampleProblem | undefined {
  const selection = example.text
    .replace(/\{\s*…\s*\}/g, "{ __typename }")
    .replace(/…/g, " ")
    // `(from, to)`: argument names without values become variables, so the names are still checked.
    .replace(
      /\(([^():]*)\)/g,
      (_, names: string) =>
        `(${names
          .split(",")
          .map((n) => n.trim())
          .filter(Boolean)
          .map((n) => `${n}: $${n}`)
          .join(", ")})`,
    );
  const name = /^([A-Za-z_]\w*)/.exec(example.text)![1]!;
  const candidates = typesWithField(schema, name);
  let best: string[] | undefined;
  for (const type of candidates) {
    let parsed: GraphQL.DocumentNode;
    try {
      parsed = graphql.parse(`fragment Example on ${type.name} { ${selection} }`);
    } catch (err) {
      return { example, messages: [at(1, `not a GraphQL selection: ${(err as Error).message}`)] };
    }
    const errors = graphql.validate(schema, parsed, SHORTHAND_RULES());
    if (errors.length === 0) return undefined;
    const messages = errors.map((e) => at(1, `${e.message} (as a selection on ${type.name})`));
    if (!best || type === schema.getQueryType() || type === schema.getMutationType()) best = messages;
  }
  return { example, messages: best ?? [at(1, `no type has a field "${name}"`)] };
}
