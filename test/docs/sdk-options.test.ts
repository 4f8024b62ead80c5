import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { examplesOfComment, ROOT } from "./jsdoc-examples.js";

// Every option a definitions file can pass, and every function it can import from "tributary", carries TSDoc with an
// `@example` that jsdoc-examples.test.ts type-checks: what an editor shows on hover is documentation that compiles.

/** The config interfaces of the SDK, by the file that declares them. Inherited and picked properties count too. */
const CONFIG_INTERFACES: Record<string, readonly string[]> = {
  "src/sdk/asset-config.ts": ["AssetConfigBase", "AssetConfig", "MappedAssetConfig", "RetryConfig"],
  "src/sdk/source-asset.ts": ["SourceAssetConfig"],
  "src/sdk/check.ts": ["CheckConfig"],
  "src/sdk/wait.ts": ["WaitOptions", "WaitForOptions"],
  "src/partitions/time-partitions.ts": ["TimePartitionsOptions", "TimeWindowsOptions"],
  "src/partitions/partition-mappings.ts": ["TimeWindowMappingOptions", "MultiMappingDimension"],
};

const program = ts.createProgram([path.join(ROOT, "src/index.ts"), ...Object.keys(CONFIG_INTERFACES).map((f) => path.join(ROOT, f))], {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2023,
  strict: true,
  skipLibCheck: true,
  noEmit: true,
});
const checker = program.getTypeChecker();

function moduleSymbol(file: string): ts.Symbol {
  const source = program.getSourceFile(path.join(ROOT, file));
  const symbol = source && checker.getSymbolAtLocation(source);
  if (!symbol) throw new Error(`${file} is not a module of the program`);
  return symbol;
}

/** What a symbol's TSDoc lacks: "" when one of its declarations has a description and an `@example` at a line start. */
function missingDoc(symbol: ts.Symbol): string {
  const comments = (symbol.getDeclarations() ?? []).flatMap((d) =>
    ts.getJSDocCommentsAndTags(d).flatMap((node) => (ts.isJSDoc(node) ? [node.getText()] : [])),
  );
  if (comments.length === 0) return "no TSDoc";
  if (ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim() === "") return "no description";
  return comments.some((c) => examplesOfComment(c).length > 0) ? "" : "no @example";
}

function where(symbol: ts.Symbol): string {
  const d = symbol.getDeclarations()?.[0];
  if (!d) return "?";
  const source = d.getSourceFile();
  return `${path.relative(ROOT, source.fileName)}:${source.getLineAndCharacterOfPosition(d.getStart()).line + 1}`;
}

describe("the SDK's TSDoc", () => {
  it("documents every property of the config interfaces, with an example", () => {
    const problems: string[] = [];
    const seen = new Set<string>();
    let properties = 0;
    for (const [file, names] of Object.entries(CONFIG_INTERFACES)) {
      const exports = checker.getExportsOfModule(moduleSymbol(file));
      for (const name of names) {
        const symbol = exports.find((s) => s.name === name);
        if (!symbol) {
          problems.push(`${file}: no exported ${name}`);
          continue;
        }
        for (const property of checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol))) {
          properties++;
          // A property inherited or picked from another interface is reported once, where it is declared.
          if (seen.has(where(property))) continue;
          seen.add(where(property));
          const missing = missingDoc(property);
          if (missing) problems.push(`${name}.${property.name} (${where(property)}): ${missing}`);
        }
      }
    }
    expect(properties).toBeGreaterThan(60);
    expect(problems).toEqual([]);
  });

  it("documents every function the public entry point exports, with an example", () => {
    const problems: string[] = [];
    let functions = 0;
    for (const exported of checker.getExportsOfModule(moduleSymbol("src/index.ts"))) {
      const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      const declaration = symbol.valueDeclaration;
      // Functions, and constants holding one (the typed mappings); classes (the errors) are not called.
      if (!declaration || symbol.flags & ts.SymbolFlags.Class) continue;
      if (checker.getTypeOfSymbolAtLocation(symbol, declaration).getCallSignatures().length === 0) continue;
      functions++;
      const missing = missingDoc(symbol);
      if (missing) problems.push(`${exported.name} (${where(symbol)}): ${missing}`);
    }
    expect(functions).toBeGreaterThan(40);
    expect(problems).toEqual([]);
  });
});
