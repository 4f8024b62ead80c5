import { z } from "zod";
import { InputError } from "../errors/index.js";
import { parseDuration } from "../sdk/index.js";

// What the access commands (users, tokens, teams, grant, revoke, audit) accept, checked before the database is
// opened: a name the schema would refuse is refused here, naming the flag, with what a valid one looks like.

/** A user's or service account's name: the pattern of principals.name. */
export const PRINCIPAL_NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$/;
/** A team's name: the pattern of teams.name. */
export const TEAM_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;

/** Longest password read (the sign-in routes accept no longer one). */
const MAX_PASSWORD_LENGTH = 1000;
/** A token's lifetime when --expires is not given. */
export const DEFAULT_TOKEN_LIFETIME = "90d";

const principalName = z
  .string()
  .regex(PRINCIPAL_NAME, 'is not a valid name: 1 to 100 letters, digits, "_", ".", "@" or "-", starting with a letter or digit');
const teamName = z
  .string()
  .regex(TEAM_NAME, 'is not a valid team name: 1 to 100 letters, digits, "_", "." or "-", starting with a letter or digit');
/** A group or `owner` value a team owns: what the definitions can hold, printable. */
const ownedValue = z
  .string()
  .min(1, "is empty")
  .max(200, "is longer than 200 characters")
  .regex(/^[^\p{Cc}]+$/u, "holds control characters");

export const schemas = {
  principalName,
  teamName,
  ownedValue,
  role: z.enum(["viewer", "operator", "admin"], { error: "is not a role: give viewer, operator or admin" }),
  description: z
    .string()
    .max(200, "is longer than 200 characters")
    .regex(/^[^\p{Cc}]*$/u, "holds control characters"),
  /** `never`, or a positive duration (`30d`, `12h`): the lifetime of a token, in milliseconds (null: never expires). */
  expires: z.string().transform((value, ctx) => {
    if (value === "never") return null;
    const ms = durationOrUndefined(value);
    if (ms === undefined || ms <= 0) {
      ctx.addIssue({ code: "custom", message: 'is not a lifetime: write e.g. 30d, 12h or "never"' });
      return z.NEVER;
    }
    return ms;
  }),
  /** A duration back from now (`24h`, `7d`) or an ISO 8601 instant. */
  since: z.string().transform((value, ctx) => {
    const ms = durationOrUndefined(value);
    if (ms !== undefined) return new Date(Date.now() - ms);
    const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : undefined;
    if (at === undefined || Number.isNaN(at.getTime())) {
      ctx.addIssue({ code: "custom", message: "is neither a duration (24h, 7d) nor an ISO 8601 instant (2025-01-31T12:00:00Z)" });
      return z.NEVER;
    }
    return at;
  }),
  limit: z
    .string()
    .regex(/^\d+$/, "is not a whole number")
    .transform(Number)
    .pipe(z.number().int().min(1, "must be at least 1").max(10_000, "must be at most 10000")),
  action: z.string().regex(/^[A-Za-z][A-Za-z0-9]{0,99}$/, "is not an action name (e.g. launchRun, signIn, createToken)"),
  /** A token by its id (a UUID), its prefix (`trb_` and 8 characters, as listed) or the token itself. */
  tokenRef: z
    .string()
    .regex(
      /^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|trb_[A-Za-z0-9_-]{8}|trb_[A-Za-z0-9_-]{43})$/,
      "is neither a token id nor a token prefix (`tributary tokens list` shows both)",
    ),
} as const;

function durationOrUndefined(value: string): number | undefined {
  try {
    return parseDuration(value, "duration");
  } catch {
    return undefined;
  }
}

/**
 * Checks a command's flags and arguments, each with its schema, and returns them parsed. The first bad one is an
 * InputError naming it (`--to`, `<name>`) with the value and what was expected.
 */
export function parseInputs<S extends Record<string, z.ZodType>>(
  fields: { [K in keyof S]: { readonly flag: string; readonly value: unknown } },
  shape: S,
): { [K in keyof S]: z.output<S[K]> } {
  const out: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(shape)) {
    const { flag, value } = fields[key]!;
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const message = parsed.error.issues[0]?.message ?? "is not valid";
      const shown = typeof value === "string" ? ` ${JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)}` : "";
      throw new InputError(`${flag}:${shown} ${message}`, { location: { field: flag } });
    }
    out[key] = parsed.data;
  }
  return out as { [K in keyof S]: z.output<S[K]> };
}

/** A flag that may be left out: undefined when it is, else parsed as parseInputs does. */
export function optionalInput<S extends z.ZodType>(flag: string, value: string | undefined, schema: S): z.output<S> | undefined {
  return value === undefined ? undefined : parseInputs({ value: { flag, value } }, { value: schema }).value;
}

/** Exactly one of two flags: the value given and which flag gave it. */
export function oneOf<A extends string, B extends string>(
  a: { readonly flag: A; readonly value: string | undefined },
  b: { readonly flag: B; readonly value: string | undefined },
  code: string,
): { flag: A | B; value: string } {
  if (a.value !== undefined && b.value !== undefined) {
    throw new InputError(`${a.flag} and ${b.flag} exclude each other: give one`, { code, location: { field: a.flag } });
  }
  if (a.value !== undefined) return { flag: a.flag, value: a.value };
  if (b.value !== undefined) return { flag: b.flag, value: b.value };
  throw new InputError(`give ${a.flag} <name> or ${b.flag} <name>`, { code, location: { field: a.flag } });
}

/**
 * A password from standard input, never from a flag (flags end up in shell histories and process listings). From a
 * pipe or file: everything up to the end, without one trailing line ending. On a terminal: one line, not echoed.
 */
export async function readPassword(prompt: string): Promise<string> {
  const password = process.stdin.isTTY ? await readHiddenLine(prompt) : stripLineEnding(await readAll());
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new InputError(`the password is longer than ${MAX_PASSWORD_LENGTH} characters`, {
      code: "PASSWORD_TOO_LONG",
      location: { field: "--password-stdin" },
    });
  }
  return password;
}

function stripLineEnding(text: string): string {
  if (text.endsWith("\r\n")) return text.slice(0, -2);
  if (text.endsWith("\n")) return text.slice(0, -1);
  return text;
}

async function readAll(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    // Enough to tell a too-long password from a valid one, without reading a mistaken file whole.
    if (size > MAX_PASSWORD_LENGTH * 4 + 2) break;
  }
  return Buffer.concat(chunks).toString("utf8");
}

function readHiddenLine(prompt: string): Promise<string> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.setEncoding("utf8");
  stdin.resume();
  return new Promise((resolve, reject) => {
    let line = "";
    const done = (err?: Error) => {
      stdin.off("data", onData);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write("\n");
      if (err) reject(err);
      else resolve(line);
    };
    const onData = (text: string) => {
      for (const ch of text) {
        if (ch === "\r" || ch === "\n" || ch === "\u0004") return done();
        if (ch === "\u0003") return done(new InputError("interrupted: no password was read", { code: "PASSWORD_NOT_READ" }));
        if (ch === "\u007f" || ch === "\b") line = line.slice(0, -1);
        else line += ch;
      }
    };
    stdin.on("data", onData);
  });
}
