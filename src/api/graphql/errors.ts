import { GraphQLError } from "graphql";
import { TributaryError } from "../../errors/index.js";

/** A GraphQL error whose `extensions.code` clients can match on. */
export function codeError(code: string, message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code } });
}

/** Our own errors keep their code and message; anything else is left for masking. */
export function asGraphQLError(err: unknown): unknown {
  return err instanceof TributaryError ? codeError(err.code, err.message) : err;
}
