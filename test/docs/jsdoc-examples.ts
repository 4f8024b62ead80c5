import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import ts from "typescript";

// Every `@example` in a JSDoc comment under src/ is type-checked: an example that no longer compiles is a bug.
//
// Each example becomes a module of its own that imports every export of its file, of its module's index and of
// the public SDK (`tributary`), and holds the example in an async function (so `await` works). An example that
// uses values it does not create names them on a line `// given name: Type, other: Type` (types from the same
// imports); they become `declare const`s. Its `import` lines are hoisted to the top of the module, resolved from
// the documented file's directory.

export const ROOT = path.resolve(import.meta.dirname, "../..");
const SRC = path.join(ROOT, "src");

export interface JsdocExample {
  /** The source file, relative to the repository. */
  readonly file: string;
  /** 1-based line of the `@example` tag. */
  readonly line: number;
  readonly code: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? sourceFiles(p) : /\.ts$/.test(name) ? [p] : [];
  });
}

/** The `@example` blocks of every JSDoc comment in src/: the tag's text up to the next tag or the comment's end. */
export function extractExamples(): JsdocExample[] {
  const out: JsdocExample[] = [];
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, "utf8");
    for (const comment of text.matchAll(/\/\*\*[\s\S]*?\*\//g)) {
      const start = text.slice(0, comment.index).split("\n").length;
      for (const { line, code } of examplesOfComment(comment[0])) out.push({ file: path.relative(ROOT, file), line: start + line, code });
    }
  }
  return out;
}

/**
 * The `@example` blocks of one JSDoc comment (`/** … *\/`), each with the 0-based line of its tag within the comment.
 * A tag counts at the start of a line only: one in the middle of a sentence is not read, nor type-checked.
 */
export function examplesOfComment(comment: string): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  const lines = comment.split("\n").map((l) => l.replace(/^\s*\/?\*+\/?\s?/, "").replace(/\s*\*\/$/, ""));
  for (let i = 0; i < lines.length; i++) {
    const tag = /^@example\b ?(.*)$/.exec(lines[i]!);
    if (!tag) continue;
    const body = [tag[1]!];
    for (let j = i + 1; j < lines.length && !lines[j]!.startsWith("@"); j++) body.push(lines[j]!);
    const code = body.join("\n").trim();
    if (code) out.push({ line: i, code });
  }
  return out;
}

/** Names a module exports (values and types), through the checker. */
function exportsOf(program: ts.Program, file: string): string[] {
  const source = program.getSourceFile(file);
  const checker = program.getTypeChecker();
  const symbol = source && checker.getSymbolAtLocation(source);
  return symbol
    ? checker
        .getExportsOfModule(symbol)
        .map((s) => s.name)
        .filter((n) => n !== "default")
    : [];
}

function compilerOptions(): ts.CompilerOptions {
  const config = ts.readConfigFile(path.join(ROOT, "tsconfig.json"), (p) => ts.sys.readFile(p));
  const parsed = ts.parseJsonConfigFileContent(config.config, ts.sys, ROOT);
  // Examples show a call, not a whole program: unused names and imports are fine there.
  return { ...parsed.options, noUnusedLocals: false, noUnusedParameters: false, verbatimModuleSyntax: false, noEmit: true };
}

/** Where a generated example module lives (beside its file, so relative imports resolve the same way). */
function exampleFileName(example: JsdocExample, index: number): string {
  return path.join(ROOT, path.dirname(example.file), `__jsdoc_example_${index}.ts`);
}

function moduleText(example: JsdocExample, imports: readonly { from: string; names: readonly string[] }[]): string {
  const all = example.code.split("\n");
  // `import` lines (and their continuations up to the `from`) are hoisted to the module's top.
  const hoisted: string[] = [];
  let lines: string[] = [];
  for (let i = 0; i < all.length; i++) {
    if (!/^import\b/.test(all[i]!)) {
      lines.push(all[i]!);
      continue;
    }
    while (i < all.length && !/\bfrom\s+["'][^"']+["'];?\s*$/.test(all[i]!)) hoisted.push(all[i++]!);
    if (i < all.length) hoisted.push(all[i]!);
  }
  const ownNames = importedNames(hoisted.join("\n"));
  lines = lines.filter((l, i) => i > 0 || l.trim() !== "");
  const given = /^\/\/ given (.+)$/.exec(lines[0]?.trim() ?? "");
  const body = given ? lines.slice(1) : lines;
  const declared = given ? given[1]!.split(/,(?![^<]*>)/).map((d) => `declare const ${d.trim()};`) : [];
  // An example that exports is a module of its own (a definitions file): it stays at the top level.
  const topLevel = body.some((l) => /^export\b/.test(l));
  return [
    ...hoisted,
    // A name the example imports itself is its own: it is not imported a second time.
    ...imports
      .map((i) => ({ ...i, names: i.names.filter((n) => !ownNames.has(n)) }))
      .filter((i) => i.names.length > 0)
      .map((i) => `import { ${i.names.join(", ")} } from ${JSON.stringify(i.from)};`),
    ...declared,
    ...(topLevel ? body : ["export async function example(): Promise<void> {", ...body.map((l) => `  ${l}`), "}"]),
    "",
  ].join("\n");
}

/** The local names `import` statements bind: `a` and `c` of `import a, { b as c } from "m"`, `ns` of `* as ns`. */
function importedNames(imports: string): Set<string> {
  const names = new Set<string>();
  for (const [, clause = ""] of imports.matchAll(/\bimport\s+(?:type\s+)?([\s\S]*?)\s+from\s+["']/g)) {
    const braces = /\{([^}]*)\}/.exec(clause);
    for (const item of braces?.[1]?.split(",") ?? []) {
      const local = item
        .trim()
        .replace(/^type\s+/, "")
        .split(/\s+as\s+/)
        .pop()
        ?.trim();
      if (local) names.add(local);
    }
    const outside = clause.replace(/\{[^}]*\}/, "");
    for (const m of outside.matchAll(/(?:\*\s+as\s+)?([A-Za-z_$][\w$]*)/g)) if (m[1] !== "type") names.add(m[1]!);
  }
  return names;
}

export interface ExampleProblem {
  readonly where: string;
  readonly message: string;
}

/** Type-checks every example; returns what does not compile, as `file:line: message`. */
export function checkExamples(examples: readonly JsdocExample[]): ExampleProblem[] {
  const options = compilerOptions();
  const sdkIndex = path.join(SRC, "index.ts");
  const moduleIndex = (file: string) => {
    const rel = path.relative("src", file).split(path.sep);
    return rel.length > 1 ? path.join(SRC, rel[0]!, "index.ts") : sdkIndex;
  };
  const exporters = [...new Set(examples.flatMap((e) => [path.join(ROOT, e.file), moduleIndex(e.file), sdkIndex]))];
  const base = ts.createProgram(exporters, options);
  const exported = new Map(exporters.map((f) => [f, exportsOf(base, f)]));

  const problems: ExampleProblem[] = [];
  const generated = new Map<string, { example: JsdocExample; text: string }>();
  examples.forEach((example, i) => {
    // An example of a JavaScript file (its first line names one, e.g. `// my-secrets.mjs, …`) is only parsed.
    if (/^\/\/ [\w./-]+\.m?js\b/.test(example.code)) {
      const { diagnostics = [] } = ts.transpileModule(example.code, { fileName: "example.mjs", reportDiagnostics: true });
      for (const d of diagnostics)
        problems.push({ where: `${example.file}:${example.line}`, message: ts.flattenDiagnosticMessageText(d.messageText, "\n") });
      return;
    }
    const own = path.join(ROOT, example.file);
    const taken = new Set<string>();
    const imports = [own, moduleIndex(example.file), sdkIndex].map((f) => {
      const names = (exported.get(f) ?? []).filter((n) => !taken.has(n));
      names.forEach((n) => taken.add(n));
      const spec = `./${path.relative(path.dirname(own), f).replace(/\.ts$/, ".js")}`.replace(/^\.\/\.\.\//, "../");
      return { from: spec, names };
    });
    generated.set(exampleFileName(example, i), { example, text: moduleText(example, imports) });
  });

  const host = ts.createCompilerHost(options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (f) => generated.get(path.resolve(f))?.text ?? readFile(f);
  host.fileExists = (f) => generated.has(path.resolve(f)) || fileExists(f);
  host.getSourceFile = (f, lang, onError, fresh) => {
    const g = generated.get(path.resolve(f));
    return g ? ts.createSourceFile(f, g.text, lang, true) : getSourceFile(f, lang, onError, fresh);
  };
  const program = ts.createProgram([...generated.keys()], options, host, base);
  for (const [file, { example }] of generated) {
    const source = program.getSourceFile(file);
    for (const d of [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]) {
      problems.push({
        where: `${example.file}:${example.line}`,
        message: ts.flattenDiagnosticMessageText(d.messageText, "\n"),
      });
    }
  }
  return problems;
}
