import { createLogger, type YogaLogger } from "graphql-yoga";
import { GraphQLError } from "graphql";
import { maskCredentials, TributaryError } from "../../errors/index.js";

/** Writes one line of the server's log. */
export type ApiLog = (level: "info" | "error", message: string) => void;

/** One timestamped line on stderr, as `tributary dev` and `tributary api` log; a token a client sent is masked. */
export const stderrLog: ApiLog = (level, message) => {
  process.stderr.write(`${new Date().toISOString()} ${level} ${maskCredentials(message)}\n`);
};

/**
 * Yoga's logger: a client's mistake (a TributaryError behind a GraphQL error,
 * e.g. an unknown asset or a bad partition, or a GraphQL error of the request
 * itself) is one info line with its code; a stack trace is kept for what
 * went wrong on the server.
 */
export function yogaLogger(log: ApiLog): YogaLogger {
  const fallback = createLogger("info");
  return {
    debug: () => undefined,
    info: (...args: unknown[]) => fallback.info(...args.map(masked)),
    warn: (...args: unknown[]) => fallback.warn(...args.map(masked)),
    error: (...args: unknown[]) => {
      const [first] = args;
      const mistake = args.length === 1 ? clientMistake(first) : undefined;
      if (mistake) log("info", `graphql: ${mistake}`);
      else fallback.error(...args.map(masked));
    },
  };
}

/** A log argument with any token masked: an error becomes its stack (or message), as the logger would print it. */
function masked(arg: unknown): unknown {
  if (typeof arg === "string") return maskCredentials(arg);
  if (arg instanceof Error) return maskCredentials(arg.stack ?? arg.message);
  return arg;
}

function clientMistake(error: unknown): string | undefined {
  const original = error instanceof GraphQLError ? (error.originalError ?? undefined) : error;
  if (original instanceof TributaryError) return `${original.code}: ${firstLine(original.message)}`;
  // A GraphQL error of the request itself (validation, a bad variable): nothing failed on the server.
  if (error instanceof GraphQLError && !error.originalError) {
    const code = typeof error.extensions.code === "string" ? error.extensions.code : "GRAPHQL_INVALID";
    return `${code}: ${firstLine(error.message)}`;
  }
  return undefined;
}

function firstLine(message: string): string {
  const [line, ...rest] = message.split("\n");
  return rest.length > 0 ? `${line} (…${rest.length} more line(s))` : (line ?? "");
}
