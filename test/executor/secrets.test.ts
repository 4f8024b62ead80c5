import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TributaryError } from "../../src/errors/index.js";
import {
  ChainSecretBackend,
  EnvSecretBackend,
  FileSecretBackend,
  loadSecretBackend,
  redactSerializedError,
  SecretResolver,
  secretBackendFromEnv,
  type SecretBackend,
} from "../../src/executor/secrets.js";
import { appendStepLog, Redactor, redactText, StepLog } from "../../src/executor/step-log.js";

let root: string;
let secretsDir: string;
let logs: string;
let nextLog = 0;
const setVars = new Map<string, string | undefined>();

/** Sets a real environment variable for one test; afterEach puts the old value back. */
function setEnv(name: string, value: string): void {
  if (!setVars.has(name)) setVars.set(name, process.env[name]);
  process.env[name] = value;
}

function logFile(): string {
  return path.join(logs, `try-${nextLog++}.log`);
}

async function caught(promise: Promise<unknown>): Promise<TributaryError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(TributaryError);
    return err as TributaryError;
  }
  throw new Error("expected a rejection");
}

const map = (name: string, values: Record<string, string>): SecretBackend => ({
  name,
  get: async (key) => values[key],
});

beforeAll(() => {
  root = mkdtempSync(path.join(tmpdir(), "tributary-secrets-"));
  secretsDir = path.join(root, "secrets");
  logs = path.join(root, "logs");
  mkdirSync(secretsDir);
  writeFileSync(path.join(secretsDir, "db_password"), "from-file-pw\n");
  writeFileSync(path.join(secretsDir, "crlf"), "windows-pw\r\n");
  writeFileSync(path.join(secretsDir, "two_lines"), "line-one\nline-two\n\n");
  writeFileSync(path.join(root, "outside"), "not-a-secret");
  mkdirSync(path.join(secretsDir, "a-directory"));
  // Kubernetes mounts each key as a symlink into a ..data directory.
  mkdirSync(path.join(secretsDir, "..data"));
  writeFileSync(path.join(secretsDir, "..data", "api_token"), "k8s-token");
  symlinkSync(path.join("..data", "api_token"), path.join(secretsDir, "api_token"));
});

afterEach(() => {
  for (const [name, old] of setVars) {
    if (old === undefined) delete process.env[name];
    else process.env[name] = old;
  }
  setVars.clear();
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("EnvSecretBackend", () => {
  it("reads the prefixed variable first, then the exact name, then its upper-case form", async () => {
    const env = new EnvSecretBackend();
    setEnv("TRIBUTARY_TEST_SECRET_ONE", "upper-value");
    expect(await env.get("tributary_test_secret_one")).toBe("upper-value");
    setEnv("tributary_test_secret_one", "exact-value");
    expect(await env.get("tributary_test_secret_one")).toBe("exact-value");
    setEnv("TRIBUTARY_SECRET_TRIBUTARY_TEST_SECRET_ONE", "prefixed-value");
    expect(await env.get("tributary_test_secret_one")).toBe("prefixed-value");
    expect(await env.get("tributary_test_secret_unset")).toBeUndefined();
    expect(env.variables("db-password")).toEqual(["TRIBUTARY_SECRET_DB_PASSWORD", "db-password", "DB_PASSWORD"]);
  });

  it("takes an env object and a prefix; an empty prefix reads only the name and its upper-case form", async () => {
    const env = new EnvSecretBackend({ env: { APP_DB_PASSWORD: "a", DB_PASSWORD: "b" }, prefix: "APP_" });
    expect(await env.get("db_password")).toBe("a");
    expect(new EnvSecretBackend({ env: { TRIBUTARY_SECRET_X_KEY: "c" }, prefix: "" }).variables("x_key")).toEqual(["x_key", "X_KEY"]);
    expect(await new EnvSecretBackend({ env: { EMPTY: "" } }).get("EMPTY")).toBe("");
  });
});

describe("FileSecretBackend", () => {
  it("reads one file per secret, trimming one trailing line ending, following symlinks", async () => {
    const files = new FileSecretBackend(secretsDir);
    expect(await files.get("db_password")).toBe("from-file-pw");
    expect(await files.get("crlf")).toBe("windows-pw");
    expect(await files.get("two_lines")).toBe("line-one\nline-two\n");
    expect(await files.get("api_token")).toBe("k8s-token");
    expect(await files.get("absent")).toBeUndefined();
    expect(files.describeLookup("db_password")).toBe(`file ${path.join(secretsDir, "db_password")}`);
  });

  it.each(["../outside", "/etc/passwd", "", ".", "..", "a/b", "a\\b", "nul\0"])("refuses the name %j", async (name) => {
    const err = await caught(new FileSecretBackend(secretsDir).get(name));
    expect(err.code).toBe("SECRET_NAME_INVALID");
    expect(err.message).toContain(`secret ${JSON.stringify(name)}`);
    expect(err.message).toContain(secretsDir);
    expect(err.message).not.toContain("not-a-secret");
  });

  it("reports a directory where a file was expected", async () => {
    const err = await caught(new FileSecretBackend(secretsDir).get("a-directory"));
    expect(err.code).toBe("SECRET_BACKEND_FAILED");
    expect(err.message).toContain("is a directory");
  });
});

describe("ChainSecretBackend", () => {
  it("asks backends in order and returns the first value found", async () => {
    const asked: string[] = [];
    const spy = (name: string, values: Record<string, string>): SecretBackend => ({
      name,
      get: async (key) => {
        asked.push(name);
        return values[key];
      },
    });
    const chain = new ChainSecretBackend([spy("first", { a: "1st" }), spy("second", { a: "2nd", b: "2nd-b" }), spy("third", {})]);
    expect(await chain.get("a")).toBe("1st");
    expect(asked).toEqual(["first"]);
    expect(await chain.get("b")).toBe("2nd-b");
    expect(await chain.get("c")).toBeUndefined();
    expect(chain.name).toBe("first, second and third");
  });

  it("a backend that fails or answers with a non-string stops the search, without showing the value", async () => {
    const throwing: SecretBackend = { name: "vault", get: async () => Promise.reject(new Error("connection refused")) };
    const err = await caught(new ChainSecretBackend([throwing, map("later", { a: "x" })]).get("a"));
    expect(err.code).toBe("SECRET_BACKEND_FAILED");
    expect(err.message).toBe('secret "a": the vault backend failed: connection refused');
    const numeric = { name: "odd", get: async () => 12345678 } as unknown as SecretBackend;
    const bad = await caught(new ChainSecretBackend([numeric]).get("a"));
    expect(bad.message).toContain("returned a number");
    expect(bad.message).not.toContain("12345678");
    const nulls = { name: "nulls", get: async () => null } as unknown as SecretBackend;
    expect(await new ChainSecretBackend([nulls, map("later", { a: "found" })]).get("a")).toBe("found");
  });
});

describe("SecretResolver", () => {
  const requester = { assetKey: "sales/orders", partitionKey: "2025-03-01", runId: "r-1", tryNumber: 2 };

  it("registers the value with the redactor before returning it", async () => {
    setEnv("TRIBUTARY_SECRET_RESOLVER_TEST", "resolved-value");
    const redactor = new Redactor();
    const value = await new SecretResolver(await secretBackendFromEnv(process.env)).resolve("resolver_test", redactor, requester);
    expect(value).toBe("resolved-value");
    expect(redactor.redact("got resolved-value")).toBe("got ***");
  });

  it("names the secret and every place it looked when it is missing, and no value", async () => {
    setEnv("TRIBUTARY_SECRET_OTHER_TEST", "other-secret-value");
    const backend = await secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: secretsDir });
    const err = await caught(new SecretResolver(backend).resolve("db_password_missing", new Redactor(), requester));
    expect(err.code).toBe("SECRET_MISSING");
    expect(err.location).toEqual({ assetKey: "sales/orders", partitionKey: "2025-03-01" });
    expect(err.message).toContain(
      'asset "sales/orders" partition "2025-03-01" (run r-1, try 2): secret "db_password_missing" is not set: looked in ' +
        "environment variables (TRIBUTARY_SECRET_DB_PASSWORD_MISSING, db_password_missing, DB_PASSWORD_MISSING) and " +
        `file ${path.join(secretsDir, "db_password_missing")}.`,
    );
    expect(err.message).not.toContain("other-secret-value");
    expect(err.message).not.toContain("from-file-pw");
  });

  it("refuses an empty or non-string name, and passes backend errors on with the try", async () => {
    const resolver = new SecretResolver(await secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: secretsDir }));
    expect((await caught(resolver.resolve("", new Redactor()))).code).toBe("SECRET_NAME_INVALID");
    expect((await caught(resolver.resolve(42 as unknown as string, new Redactor()))).message).toContain("given number");
    const traversal = await caught(resolver.resolve("../outside", new Redactor(), requester));
    expect(traversal.code).toBe("SECRET_NAME_INVALID");
    expect(traversal.message).toMatch(/^asset "sales\/orders".*secret "\.\.\/outside"/);
  });

  it("finds environment variables before files", async () => {
    const backend = await secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: secretsDir, DB_PASSWORD: "from-env-pw" });
    expect(await new SecretResolver(backend).resolve("db_password", new Redactor())).toBe("from-env-pw");
    expect(await new SecretResolver(backend).resolve("api_token", new Redactor())).toBe("k8s-token");
  });
});

describe("secretBackendFromEnv", () => {
  it("uses the environment alone by default, and refuses a secrets directory that is missing or a file", async () => {
    expect((await secretBackendFromEnv({})).backends.map((b) => b.name)).toEqual(["environment variables"]);
    const missing = path.join(root, "nope");
    const err = await caught(secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: missing }));
    expect(err.code).toBe("SECRETS_CONFIG_INVALID");
    expect(err.message).toContain(`TRIBUTARY_SECRETS_DIR: ${missing} cannot be read`);
    const file = await caught(secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: path.join(root, "outside") }));
    expect(file.message).toContain("is not a directory");
  });

  it("loads a backend module and consults it after the environment and the directory", async () => {
    const module = path.join(root, "vault-backend.mjs");
    writeFileSync(
      module,
      `export default { name: "fake vault", async get(name) { return name === "vault_only" || name === "db_password" ? "vault-" + name : undefined; } };\n`,
    );
    const backend = await secretBackendFromEnv({ TRIBUTARY_SECRETS_DIR: secretsDir, TRIBUTARY_SECRETS_BACKEND: module });
    expect(backend.name).toBe(`environment variables, directory ${secretsDir} and fake vault`);
    const resolver = new SecretResolver(backend);
    expect(await resolver.resolve("vault_only", new Redactor())).toBe("vault-vault_only");
    expect(await resolver.resolve("db_password", new Redactor())).toBe("from-file-pw");
    const err = await caught(resolver.resolve("nowhere", new Redactor()));
    expect(err.message).toMatch(/looked in environment variables \(.*\), file .*nowhere and fake vault\./);
  });

  it("names a module without a name after its file", async () => {
    const module = path.join(root, "anonymous-backend.mjs");
    writeFileSync(module, `export default { async get() { return undefined; } };\n`);
    expect((await loadSecretBackend(module)).name).toBe(`backend module ${module}`);
  });

  it.each([
    ["no default export", `export const backend = { async get() { return "x"; } };`, "has no default export"],
    ["a function", `export default function factory() { return {}; }`, "exports default a function"],
    ["no get", `export default { name: "half" };`, "exports default an object without a get method"],
    ["a throwing module", `throw new Error("boom at import");`, "cannot be imported: boom at import"],
  ])("refuses a backend module with %s, naming the file", async (label, source, problem) => {
    const module = path.join(root, `bad-${label.replace(/\W+/g, "-")}.mjs`);
    writeFileSync(module, source);
    const err = await caught(secretBackendFromEnv({ TRIBUTARY_SECRETS_BACKEND: module }));
    expect(err.code).toBe("SECRETS_CONFIG_INVALID");
    expect(err.location).toEqual({ file: module });
    expect(err.message).toContain(`TRIBUTARY_SECRETS_BACKEND: secret backend module ${module} ${problem}`);
  });

  it("refuses a backend module that does not exist", async () => {
    const err = await caught(loadSecretBackend(path.join(root, "missing.mjs")));
    expect(err.message).toContain("missing.mjs does not exist");
  });
});

describe("redaction", () => {
  it("masks a secret in the message and in the fields of a step log line", () => {
    const log = new StepLog(logFile());
    log.redactor.add("hunter2-pw");
    log.write("info", "connecting with hunter2-pw now", { password: "hunter2-pw", url: "postgres://u:hunter2-pw@db/x" });
    log.close();
    const text = readFileSync(log.file, "utf8");
    expect(text).not.toContain("hunter2-pw");
    expect(text).toContain('INFO connecting with *** now {"password":"***","url":"postgres://u:***@db/x"}');
  });

  it("masks a value with quotes and backslashes in its raw, JSON-escaped and doubly escaped forms", () => {
    const secret = 'pa"ss\\word';
    const log = new StepLog(logFile());
    log.redactor.add(secret);
    log.write("warn", `raw ${secret} json ${JSON.stringify({ secret })}`, { secret, body: JSON.stringify({ secret }) });
    log.close();
    const text = readFileSync(log.file, "utf8");
    expect(text).not.toContain('pa"ss');
    expect(text).not.toContain('pa\\"ss');
    expect(text).toContain('WARN raw *** json {"secret":"***"} {"secret":"***","body":"{\\"secret\\":\\"***\\"}"}');
    // What is left is still JSON.
    expect(JSON.parse(text.slice(text.indexOf("} {") + 2))).toEqual({ secret: "***", body: '{"secret":"***"}' });
  });

  it("masks a multi-line secret before newlines are escaped, and a URL-encoded secret", () => {
    const log = new StepLog(logFile());
    log.redactor.add("line-a\nline-b").add("p@ss/word");
    log.write("error", "key:\nline-a\nline-b\nend", { key: "line-a\nline-b", url: `https://u:${encodeURIComponent("p@ss/word")}@h` });
    log.close();
    const text = readFileSync(log.file, "utf8");
    expect(text).toContain('ERROR key:\\n***\\nend {"key":"***","url":"https://u:***@h"}');
  });

  it("leaves secrets shorter than 4 characters alone", () => {
    const log = new StepLog(logFile());
    log.redactor.add("abc").add("");
    expect(log.redactor.size).toBe(0);
    log.write("info", "abc is short", { v: "abc" });
    log.close();
    expect(readFileSync(log.file, "utf8")).toContain('INFO abc is short {"v":"abc"}');
    expect(redactText("abcd abc", ["abc", "abcd"])).toBe("*** abc");
  });

  it("still masks a line written after the log closed", () => {
    const log = new StepLog(logFile());
    log.redactor.add("late-secret");
    log.write("info", "first");
    log.close();
    log.write("error", "timer fired after the try: late-secret", { v: "late-secret" });
    const lines = readFileSync(log.file, "utf8").trimEnd().split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/ERROR timer fired after the try: \*\*\* \{"v":"\*\*\*"\}$/);
  });

  it("masks what appendStepLog writes when given the try's redactor", () => {
    const file = logFile();
    const redactor = new Redactor().add("outside-secret");
    appendStepLog(file, "error", "step failed: outside-secret", { code: "X" }, redactor);
    appendStepLog(file, "info", "no redactor: visible-value");
    const text = readFileSync(file, "utf8");
    expect(text).toContain("step failed: ***");
    expect(text).toContain("visible-value");
  });

  it("masks the longer of two overlapping secrets whole, and shares one redactor between logs", () => {
    const redactor = new Redactor().add("token").add("token-extended");
    expect(redactor.redact("token-extended and token")).toBe("*** and ***");
    const log = new StepLog(logFile(), { redactor });
    expect(log.redactor).toBe(redactor);
    expect(new Redactor().redact("nothing to do")).toBe("nothing to do");
  });

  it("masks a failed step's error, its stack and its causes", () => {
    const redactor = new Redactor().add("err-secret");
    const error = {
      name: "UserCodeError",
      code: "USER_CODE_ERROR",
      message: "failed: login err-secret",
      stack: "Error: err-secret\n    at x",
      cause: { name: "Error", code: "ERROR", message: "auth err-secret" },
    };
    expect(redactSerializedError(error, redactor)).toEqual({
      ...error,
      message: "failed: login ***",
      stack: "Error: ***\n    at x",
      cause: { name: "Error", code: "ERROR", message: "auth ***" },
    });
    expect(redactSerializedError(error, new Redactor())).toBe(error);
  });
});
