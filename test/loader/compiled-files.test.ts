import { readFileSync, realpathSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverDefinitionFiles, loadDefinitions } from "../../src/loader/index.js";
import { definitionsDir, fileResult, removeDefinitionsDirs } from "./helpers.js";

// Each definitions file is compiled, with the local files it imports, into one
// file that a child loads with plain node: what that must keep working.

afterAll(removeDefinitionsDirs);

describe("helpers (names starting with _)", () => {
  it("are not definitions files, but are compiled into the files that import them", async () => {
    const dir = await definitionsDir({
      "_shared.ts": `export const suffix = "daily";\n`,
      "_lib/keys.ts": `import { suffix } from "../_shared.js";\nexport const key = (name: string) => \`\${name}_\${suffix}\`;\n`,
      "orders.ts": `import { asset } from "tributary";
import { key } from "./_lib/keys.js";
export const orders = asset({ key: key("orders") }, async () => 1);
`,
    });
    expect(await discoverDefinitionFiles(dir)).toEqual(["orders.ts"]);
    const result = await loadDefinitions({ dir });
    expect(result.files.map((f) => f.file)).toEqual(["orders.ts"]);
    expect(fileResult(result, "orders.ts")).toMatchObject({ status: "ok", imports: ["_lib/keys.ts", "_shared.ts"], warnings: [] });
    expect(result.snapshot.assets.map((a) => a.key)).toEqual(["orders_daily"]);
  }, 60_000);
});

describe("a compiled definitions file", () => {
  it("imports packages from the node_modules next to it, ES modules and CommonJS alike", async () => {
    const dir = await definitionsDir({
      "node_modules/esm-only/package.json": JSON.stringify({ name: "esm-only", type: "module", exports: "./index.js" }),
      "node_modules/esm-only/index.js": "export const answer = 42;\n",
      "node_modules/old-cjs/package.json": JSON.stringify({ name: "old-cjs", main: "lib.js" }),
      "node_modules/old-cjs/lib.js": "module.exports = { answer: 41 };\n",
      "uses-packages.ts": `import { asset } from "tributary";
import { answer } from "esm-only";
import old from "old-cjs";
export const a = asset({ key: \`pkg/\${answer}-\${old.answer}\` }, async () => 1);
`,
    });
    const result = await loadDefinitions({ dir });
    expect(fileResult(result, "uses-packages.ts")).toMatchObject({ status: "ok", imports: [] });
    expect(result.snapshot.assets.map((a) => a.key)).toEqual(["pkg/42-41"]);
  }, 60_000);

  it("sees import.meta of each source file, not of the compiled file", async () => {
    const dir = await definitionsDir({
      "_where.ts": `export const helper = { url: import.meta.url, dirname: import.meta.dirname, filename: import.meta.filename };\n`,
      "sub/meta.ts": `import { asset } from "tributary";
import { helper } from "../_where.js";
export const a = asset({ key: "meta", metadata: { helper, url: import.meta.url } }, async () => 1);
`,
    });
    const real = realpathSync(dir);
    const result = await loadDefinitions({ dir });
    expect(fileResult(result, "sub/meta.ts").status).toBe("ok");
    expect(result.snapshot.assets[0]?.metadata).toEqual({
      helper: { url: pathToFileURL(path.join(real, "_where.ts")).href, dirname: real, filename: path.join(real, "_where.ts") },
      url: pathToFileURL(path.join(real, "sub", "meta.ts")).href,
    });
  }, 60_000);

  it("reports what does not compile with file:line:col, naming the helper it is in", async () => {
    const dir = await definitionsDir({
      "_broken.ts": `export const ok = 1;\nexport const bad = (;\n`,
      "uses-broken.ts": `import { asset } from "tributary";\nimport { ok } from "./_broken.js";\nexport const a = asset({ key: "b" + ok }, async () => 1);\n`,
      "missing.ts": `import { nothing } from "./nope.js";\nexport const a = nothing;\n`,
      "no-such-export.ts": `import { asset, assett } from "tributary";\nexport const a = asset({ key: "x" }, assett);\n`,
      "fine.ts": `import { asset } from "tributary";\nexport const fine = asset({ key: "fine" }, async () => 1);\n`,
    });
    const result = await loadDefinitions({ dir });
    const broken = fileResult(result, "uses-broken.ts");
    expect(broken.error?.code).toBe("LOAD_SYNTAX_ERROR");
    expect(broken.error?.message).toMatch(/^_broken\.ts:2:\d+: syntax error: .+ \(imported by uses-broken\.ts\)/);
    expect(broken.error?.message).toContain("2 | export const bad = (;");
    // Watch mode reloads the file when the helper is fixed.
    expect(broken.imports).toEqual(["_broken.ts"]);
    const missing = fileResult(result, "missing.ts").error;
    expect(missing?.code).toBe("LOAD_IMPORT_ERROR");
    expect(missing?.message).toMatch(/^missing\.ts:1:\d+: importing the file failed: Could not resolve "\.\/nope\.js"/);
    const noExport = fileResult(result, "no-such-export.ts").error;
    expect(noExport?.code).toBe("LOAD_IMPORT_ERROR");
    expect(noExport?.message).toMatch(/^no-such-export\.ts:1:\d+: importing the file failed: No matching export .* "assett"/);
    expect(fileResult(result, "fine.ts").status).toBe("ok");
  }, 60_000);
});

describe("a definitions file that opens a TLS connection at import", () => {
  const TLS = fileURLToPath(new URL("../fixtures/definitions/tls/", import.meta.url));
  const cert = path.join(TLS, "localhost-cert.pem");
  let server: Server;
  let dir: string;
  const saved = process.env.NODE_EXTRA_CA_CERTS;

  beforeAll(async () => {
    server = createServer({ cert: readFileSync(cert), key: readFileSync(path.join(TLS, "localhost-key.pem")) }, (_req, res) =>
      res.end("tls"),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    dir = await definitionsDir({
      "with-https.ts": `import { get } from "node:https";
import { asset } from "tributary";
const body = await new Promise<string>((resolve, reject) => {
  get(${JSON.stringify(url)}, (res) => {
    let text = "";
    res.on("data", (chunk) => (text += chunk));
    res.on("end", () => resolve(text));
  }).on("error", reject);
});
export const a = asset({ key: \`\${body}/https\` }, async () => 1);
`,
      "with-fetch.ts": `import { asset } from "tributary";
const body = await (await fetch(${JSON.stringify(url)})).text();
export const a = asset({ key: \`\${body}/fetch\` }, async () => 1);
`,
    });
  });

  afterAll(async () => {
    if (saved === undefined) delete process.env.NODE_EXTRA_CA_CERTS;
    else process.env.NODE_EXTRA_CA_CERTS = saved;
    await new Promise((resolve) => server.close(resolve));
  });

  it("trusts the certificates in NODE_EXTRA_CA_CERTS, as node does", async () => {
    process.env.NODE_EXTRA_CA_CERTS = cert;
    const result = await loadDefinitions({ dir });
    expect(result.files.map((f) => [f.file, f.status, f.error?.message])).toEqual([
      ["with-fetch.ts", "ok", undefined],
      ["with-https.ts", "ok", undefined],
    ]);
    expect(result.snapshot.assets.map((a) => a.key)).toEqual(["tls/fetch", "tls/https"]);
  }, 60_000);

  it("and only those", async () => {
    delete process.env.NODE_EXTRA_CA_CERTS;
    const result = await loadDefinitions({ dir });
    expect(result.files.map((f) => [f.file, f.status])).toEqual([
      ["with-fetch.ts", "error"],
      ["with-https.ts", "error"],
    ]);
    expect(fileResult(result, "with-https.ts").error?.message).toMatch(/self[- ]signed certificate/i);
  }, 60_000);
});
