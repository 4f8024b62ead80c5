import type { z } from "zod";
import { TributaryError } from "../../errors/index.js";

/** Airflow's error document (RFC 7807), the spec's `Error` schema. */
interface AirflowProblem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
}

const PROBLEM_TYPES: Record<number, string> = {
  400: "BadRequest",
  403: "PermissionDenied",
  404: "NotFound",
  409: "AlreadyExists",
  413: "BadRequest",
  415: "BadRequest",
};

/**
 * A REST request that cannot be answered, with its HTTP status: codes
 * REST_NOT_FOUND (404), REST_BAD_REQUEST (400), REST_UNSUPPORTED_MEDIA_TYPE (415).
 */
export class RestError extends TributaryError {
  constructor(
    readonly status: number,
    code: string,
    readonly title: string,
    message: string,
  ) {
    super(code, message);
  }

  static notFound(what: string, detail: string): RestError {
    return new RestError(404, "REST_NOT_FOUND", `${what} not found`, detail);
  }

  static badRequest(detail: string): RestError {
    return new RestError(400, "REST_BAD_REQUEST", "Bad request", detail);
  }
}

/** The Airflow error document for a status and detail. */
export function problem(status: number, title: string, detail: string): AirflowProblem {
  const type = PROBLEM_TYPES[status] ?? "Unknown";
  return {
    type: `https://airflow.apache.org/docs/apache-airflow/2.10.0/stable-rest-api-ref.html#section/Errors/${type}`,
    title,
    status,
    detail,
  };
}

/**
 * Parses with a zod schema; the first problem becomes a 400 naming where it
 * is (`body.logical_date: …`, `query.limit: …`).
 */
export function parseOr400<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = [where, ...(issue?.path ?? []).map(String)].join(".");
  throw RestError.badRequest(`${field}: ${issue?.message ?? "invalid"}`);
}
