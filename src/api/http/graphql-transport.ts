import type { MiddlewareHandler } from "hono";
import { refusal } from "./refusal.js";

/**
 * `/graphql` takes a POST body only as `application/json`, which a browser
 * cannot send to another site without a CORS preflight. Form posts
 * (urlencoded, multipart) and `text/plain` are what a cross-site form or a
 * "simple" fetch can send: they are refused with 415 before the body is read,
 * so nothing executes. GET stays for queries (GraphQL over HTTP refuses
 * mutations there with 405).
 */
export function graphqlTransport(): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== "POST") return next();
    const given = c.req.header("content-type");
    const mediaType = given?.split(";")[0]?.trim().toLowerCase();
    if (mediaType === "application/json") return next();
    return refusal(
      c,
      415,
      "UNSUPPORTED_MEDIA_TYPE",
      given === undefined
        ? "a POST to /graphql needs a body with Content-Type: application/json; the request has no Content-Type"
        : `a POST to /graphql needs a body with Content-Type: application/json, not "${given}" (forms, multipart uploads and text are not accepted)`,
    );
  };
}
