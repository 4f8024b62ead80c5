import { realpath } from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type * as TypeScript from "typescript";
import { LoadError } from "../errors/index.js";
import { discoverDefinitionFiles } from "./discover-files.js";

/** The compiler API of the `typescript` package a project has installed. */
export type TypeScriptModule = typeof TypeScript;

/** One error the compiler reports in a definitions file (or a file it imports, or the project's tsconfig.json). */
export interface DefinitionTypeError {
  /** Relative to the definitions directory, `/`-separated; null for a problem with the compiler options as a whole. */
  readonly file: string | null;
  /** 1-based; null with `file` null. */
  readonly line: number | null;
  readonly column: number | null;
  /** The `key` of the `asset(…)` or `sourceAsset(…)` call the error is in (for a check: the asset it checks, when known). */
  readonly assetKey: string | null;
  /** The `name` of the `check(…)` call the error is in. */
  readonly check: string | null;
  /** The compiler's code, e.g. `TS2322`. */
  readonly code: string;
  readonly message: string;
}

export interface DefinitionTypesResult {
  /** The version of the `typescript` package that checked the files. */
  readonly typescript: string;
  /** The tsconfig.json whose options were used (absolute), or null for the defaults. */
  readonly tsconfig: string | null;
  /** False when the tsconfig.json has errors: those are the errors, and no file was checked. */
  readonly checked: boolean;
  /** How many files were checked: the definitions files and the local files they import. */
  readonly files: number;
  readonly errors: readonly DefinitionTypeError[];
}

const PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));
/** What `import … from "tributary"` means where the project has no `tributary` package of its own: this package's SDK. */
const SDK_ENTRY = path.join(PACKAGE_DIR, "src", "index.ts");
const SDK_SOURCES = path.join(PACKAGE_DIR, "src") + path.sep;
/** The calls whose first argument's `key` names the asset an error is in; `check` names its check. */
const DEFINITION_CALLS = new Set(["asset", "sourceAsset", "check"]);
/** "No inputs were found in config file": its include patterns do not matter, the definitions files are the inputs. */
const NO_INPUTS = 18003;

/**
 * The `typescript` package of the project the definitions directory belongs to, found from that directory upwards
 * as the project's own tools would find it: never the one Tributary was built with, which may be another version.
 */
export async function loadTypeScript(dir: string): Promise<TypeScriptModule> {
  const root = await realpath(dir).catch(() => path.resolve(dir));
  const fromProject = createRequire(path.join(root, "package.json"));
  let entry: string;
  try {
    entry = fromProject.resolve("typescript");
  } catch {
    throw new LoadError(
      "CHECK_TYPES_NO_TYPESCRIPT",
      `--types needs the typescript package, and none is installed in ${root} or a directory above it; ` +
        "add it to the project: npm install --save-dev typescript",
      { location: { file: root } },
    );
  }
  const ts = fromProject(entry) as Partial<TypeScriptModule>;
  if (typeof ts.createProgram !== "function") {
    throw new LoadError(
      "CHECK_TYPES_NO_COMPILER_API",
      `the typescript package at ${entry} (version ${String(ts.version)}) has no compiler API; --types needs TypeScript 5 or 6: ` +
        "npm install --save-dev typescript@6",
      { location: { file: entry } },
    );
  }
  return ts as TypeScriptModule;
}

/**
 * Type-checks the definitions files in `dir` with the project's TypeScript: the options of the nearest tsconfig.json
 * (from `dir` upwards; sensible defaults without one), never emitting, and only the definitions files and what they
 * import as inputs, whatever the tsconfig.json includes. A project without a `tributary` package of its own (an
 * example inside this repository, a directory elsewhere) gets this package's SDK for it, as the loader does.
 *
 * Errors are reported in the definitions files and the local files they import, each with the asset (or check)
 * it is in; the SDK's sources and packages are not checked beyond what those files use of them.
 */
export async function checkDefinitionTypes(ts: TypeScriptModule, dir: string): Promise<DefinitionTypesResult> {
  const root = await realpath(dir).catch(() => path.resolve(dir));
  const relFiles = await discoverDefinitionFiles(root);
  const tsconfig = ts.findConfigFile(root, ts.sys.fileExists, "tsconfig.json") ?? null;
  const relative = (file: string) => path.relative(root, file).split(path.sep).join("/");

  const config = tsconfig ? readTsconfig(ts, tsconfig) : { options: defaultOptions(ts, root), errors: [] };
  if (config.errors.length > 0) {
    const errors = config.errors.map((d) => typeError(ts, d, relative));
    return { typescript: ts.version, tsconfig, checked: false, files: 0, errors };
  }
  const options = withSdk(ts, forChecking(config.options), root);
  const roots = relFiles.filter((rel) => options.allowJs || /\.m?ts$/.test(rel)).map((rel) => path.join(root, ...rel.split("/")));
  const program = ts.createProgram({ rootNames: roots, options });
  const checked = program.getSourceFiles().filter((sf) => isProjectFile(program, sf));
  const inFiles = checked.flatMap((sf) => [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)]);
  // The global ones are known once the files are checked.
  const diagnostics = [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics(), ...inFiles];
  const checker = program.getTypeChecker();
  const errors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).map((d) => typeError(ts, d, relative, checker));
  return { typescript: ts.version, tsconfig, checked: true, files: checked.length, errors: errors.sort(byPlace) };
}

function readTsconfig(ts: TypeScriptModule, tsconfig: string): { options: TypeScript.CompilerOptions; errors: TypeScript.Diagnostic[] } {
  // Read once for the syntax (the recovering parser below would mend an unclosed brace without a word), then parsed
  // from its source text, so an error in an option points at its line.
  const read = ts.readConfigFile(tsconfig, ts.sys.readFile);
  if (read.error) return { options: {}, errors: [read.error] };
  const parsed = ts.parseJsonSourceFileConfigFileContent(
    ts.readJsonConfigFile(tsconfig, ts.sys.readFile),
    ts.sys,
    path.dirname(tsconfig),
    undefined,
    tsconfig,
  );
  return { options: parsed.options, errors: parsed.errors.filter((d) => d.code !== NO_INPUTS) };
}

/** Without a tsconfig.json: strict, for a modern runtime, imports resolved as a bundler (and the loader) does. */
function defaultOptions(ts: TypeScriptModule, root: string): TypeScript.CompilerOptions {
  let nodeTypes = false;
  try {
    createRequire(path.join(root, "package.json")).resolve("@types/node/package.json");
    nodeTypes = true;
  } catch {
    // Node's globals stay unknown, as they would to the project's own editor.
  }
  return {
    strict: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    resolveJsonModule: true,
    esModuleInterop: true,
    skipLibCheck: true,
    ...(nodeTypes ? { types: ["node"] } : {}),
  };
}

/** The project's options for checking only: nothing is written, and the inputs may lie outside its rootDir. */
function forChecking(options: TypeScript.CompilerOptions): TypeScript.CompilerOptions {
  const {
    rootDir: _rootDir,
    composite: _composite,
    incremental: _incremental,
    tsBuildInfoFile: _tsBuildInfoFile,
    emitDeclarationOnly: _emitDeclarationOnly,
    declaration: _declaration,
    declarationMap: _declarationMap,
    ...rest
  } = options;
  return { ...rest, noEmit: true };
}

/** Maps `tributary` to this package's SDK sources when the project resolves no `tributary` of its own. */
function withSdk(ts: TypeScriptModule, options: TypeScript.CompilerOptions, root: string): TypeScript.CompilerOptions {
  const importer = path.join(root, "definitions.ts");
  if (ts.resolveModuleName("tributary", importer, options, ts.sys).resolvedModule) return options;
  return { ...options, paths: { ...options.paths, tributary: [SDK_ENTRY] } };
}

/** The project's own code: not a declaration file, a package, or the SDK's sources. */
function isProjectFile(program: TypeScript.Program, sf: TypeScript.SourceFile): boolean {
  if (sf.isDeclarationFile || program.isSourceFileFromExternalLibrary(sf)) return false;
  const file = path.resolve(sf.fileName);
  return !file.split(path.sep).includes("node_modules") && !file.startsWith(SDK_SOURCES);
}

function typeError(
  ts: TypeScriptModule,
  d: TypeScript.Diagnostic,
  relative: (file: string) => string,
  checker?: TypeScript.TypeChecker,
): DefinitionTypeError {
  const message = ts.flattenDiagnosticMessageText(d.messageText, "\n");
  const code = `TS${d.code}`;
  if (!d.file) return { file: null, line: null, column: null, assetKey: null, check: null, code, message };
  const at = d.file.getLineAndCharacterOfPosition(d.start ?? 0);
  const definition = checker && d.start !== undefined ? enclosingDefinition(ts, d.file, d.start, checker) : undefined;
  return {
    file: relative(d.file.fileName),
    line: at.line + 1,
    column: at.character + 1,
    assetKey: definition?.assetKey ?? null,
    check: definition?.check ?? null,
    code,
    message,
  };
}

/** Errors without a file first, then by file, line and column. */
function byPlace(a: DefinitionTypeError, b: DefinitionTypeError): number {
  if (a.file !== b.file) return a.file === null ? -1 : b.file === null ? 1 : a.file < b.file ? -1 : 1;
  return (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0);
}

/** The innermost `asset(…)`, `sourceAsset(…)` or `check(…)` call around a position, by what it defines. */
function enclosingDefinition(
  ts: TypeScriptModule,
  sf: TypeScript.SourceFile,
  position: number,
  checker: TypeScript.TypeChecker,
): { assetKey: string | null; check: string | null } | undefined {
  let innermost: TypeScript.CallExpression | undefined;
  const visit = (node: TypeScript.Node): void => {
    if (position < node.pos || position >= node.end) return;
    if (ts.isCallExpression(node) && calleeName(ts, node) !== undefined) innermost = node;
    ts.forEachChild(node, visit);
  };
  visit(sf);
  if (!innermost) return undefined;
  if (calleeName(ts, innermost) !== "check") return { assetKey: stringProperty(ts, innermost.arguments[0], "key"), check: null };
  return { assetKey: checkedAssetKey(ts, innermost.arguments[0], checker), check: stringProperty(ts, innermost.arguments[1], "name") };
}

/** `asset`, `sourceAsset` or `check`, called by name or as a namespace's member (`t.asset(…)`). */
function calleeName(ts: TypeScriptModule, call: TypeScript.CallExpression): string | undefined {
  const callee = call.expression;
  const name = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
  return name !== undefined && DEFINITION_CALLS.has(name) ? name : undefined;
}

/** A property of an object literal whose value is a string written out, e.g. `{ key: "shop/orders" }`. */
function stringProperty(ts: TypeScriptModule, node: TypeScript.Node | undefined, name: string): string | null {
  if (!node || !ts.isObjectLiteralExpression(node)) return null;
  for (const p of node.properties) {
    if (!ts.isPropertyAssignment(p) || !p.name || !(ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) || p.name.text !== name)
      continue;
    return ts.isStringLiteralLike(p.initializer) ? p.initializer.text : null;
  }
  return null;
}

/** A check's asset: its key written out, or a variable (here or imported) holding an `asset(…)` call. */
function checkedAssetKey(ts: TypeScriptModule, target: TypeScript.Expression | undefined, checker: TypeScript.TypeChecker): string | null {
  if (!target) return null;
  if (ts.isStringLiteralLike(target)) return target.text;
  if (!ts.isIdentifier(target)) return null;
  let symbol = checker.getSymbolAtLocation(target);
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const declaration = symbol?.valueDeclaration;
  if (!declaration || !ts.isVariableDeclaration(declaration) || !declaration.initializer) return null;
  const init = declaration.initializer;
  if (!ts.isCallExpression(init) || calleeName(ts, init) === undefined || calleeName(ts, init) === "check") return null;
  return stringProperty(ts, init.arguments[0], "key");
}
