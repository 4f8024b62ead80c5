/** Socket errors that mean "the other side is not there (now)", not "the request was wrong". */
const SOCKET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENETDOWN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/**
 * Postgres SQLSTATEs of a server going away: class 08 (connection exception), admin and crash shutdown, "cannot
 * connect now" (starting up or in recovery), and a standby that refuses writes after a failover (read-only
 * transaction).
 */
const PG_STATES = /^(08...|57P01|57P02|57P03|25006)$/;

/** What node-postgres and ioredis say when a connection they held is gone. */
const MESSAGES =
  /Connection terminated|terminating connection|connection error|timeout exceeded when trying to connect|Connection is closed|Stream isn't writeable|the database system is (starting up|shutting down|in recovery mode)|DATABASE_UNREACHABLE|fetch failed/i;

/** Socket codes as they appear inside a message ("connect ECONNREFUSED 127.0.0.1:5432"). */
const SOCKET_CODE_IN_TEXT = new RegExp(`\\b(${[...SOCKET_CODES].join("|")})\\b`);

/**
 * Whether a log line reports a failure to reach a dependency (an error that was already turned into text, such as
 * "alerts: definitions files: Error: connect ECONNREFUSED 127.0.0.1:5432").
 */
export function isConnectionErrorText(text: string): boolean {
  return MESSAGES.test(text) || SOCKET_CODE_IN_TEXT.test(text);
}

/**
 * Whether `error` (or an error in its `cause` chain) says a dependency could not be reached, as opposed to one
 * that answered with a refusal. Long-lived processes report the first as an outage (once) and retry.
 */
export function isConnectionError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e !== null && e !== undefined && depth < 8; depth++) {
    if (typeof e !== "object") return false;
    const { code, message, cause } = e as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof code === "string" && (SOCKET_CODES.has(code) || PG_STATES.test(code) || code === "DATABASE_UNREACHABLE")) return true;
    if (typeof message === "string" && isConnectionErrorText(message)) return true;
    if (e instanceof AggregateError && e.errors.some((inner) => isConnectionError(inner))) return true;
    e = cause;
  }
  return false;
}
