import { lstat, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pc from "picocolors";
import { InputError } from "../../errors/index.js";
import { printJson } from "../output.js";
import type { InitOptions } from "./init.js";

/** This package's root: the project depends on it, and its templates and tool versions come from it. */
const PACKAGE_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const TEMPLATE_DIR = path.join(PACKAGE_ROOT, "templates", "init");
/** Template files whose names would be ignored or mangled if stored under their own name. */
const RENAMED: Record<string, string> = { gitignore: ".gitignore" };
/** What may be in an "empty" directory: a repository created before the project. */
const IGNORED_ENTRIES = new Set([".git"]);

interface ProjectFile {
  readonly rel: string;
  readonly text: string;
}

interface PackageJson {
  version: string;
  engines?: { node?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/**
 * Writes a project into `dir`: everything is checked before the first file is written, every file is created
 * exclusively (an existing one is never overwritten), and a failure part-way removes what was written.
 */
export async function runInit(dir: string, opts: InitOptions): Promise<void> {
  if (opts.tributary !== undefined && opts.tributary.trim() === "") {
    throw new InputError("--tributary: give a dependency spec, e.g. file:../tributary or a version", {
      code: "INIT_OPTIONS_INVALID",
      location: { field: "--tributary" },
    });
  }
  const target = path.resolve(dir);
  const existing = await entriesOf(target);
  if (existing.includes("package.json") || existing.includes("asset-definitions")) {
    const what = existing.includes("package.json") ? "a package.json" : "an asset-definitions directory";
    throw new InputError(
      `${target} already holds ${what}: it is a project, and init starts new ones. To add Tributary to it, ` +
        `run \`npm install ${dependencySpec(opts)}\` there and put definitions in asset-definitions/`,
      { code: "INIT_EXISTING_PROJECT", location: { file: target } },
    );
  }
  const others = existing.filter((e) => !IGNORED_ENTRIES.has(e));
  if (others.length > 0 && !opts.force) {
    const shown = others.slice(0, 5).join(", ") + (others.length > 5 ? `, and ${others.length - 5} more` : "");
    throw new InputError(
      `${target} is not empty (${shown}): init into a new or empty directory, or pass --force to add the project ` +
        "beside what is there (no existing file is overwritten)",
      { code: "INIT_DIRECTORY_NOT_EMPTY", location: { file: target } },
    );
  }

  const files = await projectFiles(target, opts);
  const kept: string[] = [];
  for (const f of files) if (await exists(path.join(target, f.rel))) kept.push(f.rel);
  const written = await writeAll(
    target,
    files.filter((f) => !kept.includes(f.rel)),
  );

  const cd = path.relative(process.cwd(), target);
  const next = [...(cd === "" ? [] : [`cd ${cd.includes(" ") ? JSON.stringify(cd) : cd}`]), "npm install", "npm test", "npm start"];
  if (opts.json) {
    printJson({ ok: true, dir: target, written, kept, next });
    return;
  }
  process.stdout.write(`Created a Tributary project in ${target}\n`);
  for (const rel of written) process.stdout.write(`  ${pc.green("+")} ${rel}\n`);
  for (const rel of kept) process.stdout.write(`  ${pc.dim(`= ${rel} (already there, kept)`)}\n`);
  process.stdout.write(`\nNext:\n${next.map((c) => `  ${c}`).join("\n")}\n`);
}

/** The directory's entries; none when it does not exist yet. */
async function entriesOf(target: string): Promise<string[]> {
  const stat = await lstat(target).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return null;
    throw err;
  });
  if (stat === null) return [];
  if (!stat.isDirectory()) {
    throw new InputError(`${target} exists and is not a directory`, { code: "INIT_NOT_A_DIRECTORY", location: { file: target } });
  }
  return (await readdir(target)).sort();
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

function dependencySpec(opts: InitOptions): string {
  return opts.tributary?.trim() ?? `file:${PACKAGE_ROOT.replace(/[\\/]+$/, "")}`;
}

/** The files of a new project: package.json and tsconfig.json made here, the rest from the templates. */
async function projectFiles(target: string, opts: InitOptions): Promise<ProjectFile[]> {
  const own = JSON.parse(await readFile(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as PackageJson;
  const name = packageName(path.basename(target));
  // The same tool versions as this package's, so the project type-checks and runs its tests as Tributary does.
  const tool = (dep: string): string => {
    const version = own.devDependencies?.[dep] ?? own.dependencies?.[dep];
    if (version === undefined) throw new Error(`init: this package names no version of ${dep}`);
    return version;
  };
  const packageJson = {
    name,
    version: "0.1.0",
    private: true,
    type: "module",
    ...(own.engines?.node ? { engines: { node: own.engines.node } } : {}),
    scripts: {
      start: "tributary dev",
      test: "tributary check --types && node --import tsx --test tests/*.test.ts",
      check: "tributary check --types",
      // The tests too, and the SDK as this project's options see it.
      typecheck: "tsc",
    },
    dependencies: { tributary: dependencySpec(opts) },
    devDependencies: { "@types/node": tool("@types/node"), tsx: tool("tsx"), typescript: tool("typescript") },
  };
  const tsconfig = {
    compilerOptions: {
      target: "ES2023",
      lib: ["ES2023"],
      module: "NodeNext",
      moduleResolution: "NodeNext",
      types: ["node"],
      strict: true,
      noUncheckedIndexedAccess: true,
      isolatedModules: true,
      skipLibCheck: true,
      noEmit: true,
    },
    include: ["asset-definitions", "tests"],
  };
  const templates = (await templateFiles(TEMPLATE_DIR)).map(async (rel) => {
    const text = await readFile(path.join(TEMPLATE_DIR, ...rel.split("/")), "utf8");
    const base = path.posix.basename(rel);
    const renamed = RENAMED[base] === undefined ? rel : path.posix.join(path.posix.dirname(rel), RENAMED[base]);
    return { rel: renamed, text: text.replaceAll("{{name}}", name) };
  });
  return [
    { rel: "package.json", text: `${JSON.stringify(packageJson, null, 2)}\n` },
    { rel: "tsconfig.json", text: `${JSON.stringify(tsconfig, null, 2)}\n` },
    ...(await Promise.all(templates)),
  ];
}

/** Every file under the template directory, as relative POSIX paths, sorted. */
async function templateFiles(dir: string, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix === "" ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await templateFiles(path.join(dir, entry.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

/** A valid npm package name from a directory's name: lower case, URL-safe, at most 214 characters. */
export function packageName(base: string): string {
  const name = base
    .toLowerCase()
    .replace(/[^a-z0-9._~-]+/g, "-")
    .replace(/^[._-]+/, "")
    .replace(/-+$/, "")
    .slice(0, 214);
  return name === "" ? "tributary-project" : name;
}

/**
 * Creates the files (and their directories) exclusively. On a failure, what this call created is removed again
 * and the error is rethrown: the directory is as it was.
 */
async function writeAll(target: string, files: readonly ProjectFile[]): Promise<string[]> {
  const createdFiles: string[] = [];
  const createdDirs: string[] = [];
  let current = "";
  try {
    for (const f of files) {
      current = f.rel;
      const file = path.join(target, ...f.rel.split("/"));
      const first = await mkdir(path.dirname(file), { recursive: true });
      if (first !== undefined) createdDirs.push(first);
      await writeFile(file, f.text, { flag: "wx" });
      createdFiles.push(f.rel);
    }
    return createdFiles;
  } catch (err) {
    for (const rel of createdFiles.reverse()) await rm(path.join(target, ...rel.split("/")), { force: true });
    // A directory that did not exist before holds only what this call put there.
    for (const d of createdDirs) await rm(d, { recursive: true, force: true });
    throw new InputError(
      `could not write ${current} in ${target} (${(err as Error).message}); ` +
        `the files written before it were removed again, and the directory is as it was`,
      { code: "INIT_WRITE_FAILED", location: { file: path.join(target, ...current.split("/")) }, cause: err },
    );
  }
}
