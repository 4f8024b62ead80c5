import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "./run-cli.js";

const run = promisify(execFile);
const MAPPER = pathToFileURL(path.join(ROOT, "src/stack-source-maps.mjs")).href;

// mapStacksLazily replaces Error.prepareStackTrace for the whole process: each case runs in a node process of its own.
describe("stack traces of precompiled code, mapped when formatted", () => {
  let dir: string;
  let compiled: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "tributary-stack-maps-"));
    compiled = path.join(dir, "compiled");
    await mkdir(path.join(dir, "src"));
    await writeFile(
      path.join(dir, "src/thrower.ts"),
      `// a comment, so that lines differ\nexport function explode(): never {\n  const why: string = "from the source";\n  throw new Error(why);\n}\n`,
    );
    await writeFile(path.join(dir, "src/user.ts"), `\n\nexport function fail(): never {\n  throw new TypeError("user code");\n}\n`);
    const compile = (source: string, outfile: string, format: "esm" | "cjs", sourcemap: "linked" | "inline") =>
      build({ entryPoints: [path.join(dir, source)], outfile, bundle: true, format, sourcemap, logLevel: "silent" });
    // As the CLI's build makes them: an ES module with its map linked beside it.
    await compile("src/thrower.ts", path.join(compiled, "chunk.mjs"), "esm", "linked");
    // As the loader compiles definitions: CommonJS, loaded while Node's own support is on.
    await compile("src/user.ts", path.join(dir, "user.cjs"), "cjs", "inline");
  });
  afterAll(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const stackOf = async (script: string): Promise<string> => {
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: dir });
    return stdout;
  };

  it("names the source's file, line and column of a frame in the compiled directory", async () => {
    const stack = await stackOf(`
      import { mapStacksLazily } from ${JSON.stringify(MAPPER)};
      mapStacksLazily(new URL(${JSON.stringify(pathToFileURL(compiled + "/").href)}));
      const { explode } = await import(${JSON.stringify(pathToFileURL(path.join(compiled, "chunk.mjs")).href)});
      try { explode(); } catch (e) { process.stdout.write(e.stack); }`);
    expect(stack.split("\n")[0]).toBe("Error: from the source");
    expect(stack).toContain(`at explode (${pathToFileURL(path.join(dir, "src/thrower.ts")).href}:4:9)`);
    expect(stack).not.toContain("chunk.mjs");
  });

  it("maps code whose map Node keeps (a CommonJS file loaded with Node's support on), naming it by path", async () => {
    const stack = await stackOf(`
      import { createRequire } from "node:module";
      import { mapStacksLazily } from ${JSON.stringify(MAPPER)};
      mapStacksLazily(new URL(${JSON.stringify(pathToFileURL(compiled + "/").href)}));
      process.setSourceMapsEnabled(true);
      const { fail } = createRequire(import.meta.url)("./user.cjs");
      try { fail(); } catch (e) { process.stdout.write(e.stack); }`);
    expect(stack.split("\n")[0]).toBe("TypeError: user code");
    expect(stack).toContain(`${path.join(dir, "src/user.ts")}:4:9`);
    expect(stack).not.toContain("user.cjs");
  });

  it("leaves a frame as it is where no map answers: outside the directory, or a map that is missing or broken", async () => {
    await writeFile(path.join(dir, "plain.mjs"), `export function plain() {\n  throw new Error("plain");\n}\n`);
    const outside = await stackOf(`
      import { mapStacksLazily } from ${JSON.stringify(MAPPER)};
      mapStacksLazily(new URL(${JSON.stringify(pathToFileURL(compiled + "/").href)}));
      const { plain } = await import("./plain.mjs");
      try { plain(); } catch (e) { process.stdout.write(e.stack); }`);
    expect(outside).toContain(`at plain (${pathToFileURL(path.join(dir, "plain.mjs")).href}:2:9)`);

    await mkdir(path.join(dir, "broken"));
    await writeFile(
      path.join(dir, "broken/chunk.mjs"),
      `export function odd() {\n  throw new Error("odd");\n}\n//# sourceMappingURL=chunk.mjs.map\n`,
    );
    await writeFile(path.join(dir, "broken/chunk.mjs.map"), "{ not json");
    const broken = await stackOf(`
      import { mapStacksLazily } from ${JSON.stringify(MAPPER)};
      mapStacksLazily(new URL(${JSON.stringify(pathToFileURL(path.join(dir, "broken") + "/").href)}));
      const { odd } = await import("./broken/chunk.mjs");
      try { odd(); } catch (e) { process.stdout.write(e.stack + "\\n" + e.stack); }`);
    expect(broken).toContain(`at odd (${pathToFileURL(path.join(dir, "broken/chunk.mjs")).href}:2:9)`);
  });
});
