import { createYoga, maskError } from "graphql-yoga";
import { GraphQLError } from "graphql";
import { localGuard, type Guard } from "../../access/index.js";
import { TributaryError } from "../../errors/index.js";
import { renderLocalGraphiQL } from "../graphiql-routes.js";
import type { ApiServices } from "../services.js";
import { refusalStatus } from "./errors.js";
import { requestLimitPlugins, type RequestLimitOptions } from "./request-limits.js";
import { graphqlSchema } from "./schema.js";
import { stderrLog, yogaLogger } from "./yoga-logger.js";

/** What `/graphql` hands each request: its Guard, and who is asking for the mutation rate limit. */
export interface GraphqlRequestContext {
  guard?: Guard;
  callerKey?: () => string;
}

/** Builds the schema (once per process) ahead of the first server. */
export function prepareSchema(): void {
  graphqlSchema();
}

/** The GraphQL server behind `/graphql`: the schema over the API's services, its limits, its error masking. */
export function graphqlServer(context: ApiServices, limits: RequestLimitOptions | undefined) {
  return createYoga<GraphqlRequestContext>({
    schema: graphqlSchema(),
    // The request's Guard comes from the authentication middleware, through yoga's server context.
    context: ({ guard }: GraphqlRequestContext) => ({ ...context, guard: guard ?? localGuard() }),
    graphqlEndpoint: "/graphql",
    landingPage: false,
    graphiql: { title: "Tributary GraphiQL" },
    renderGraphiQL: renderLocalGraphiQL, // from the installed package: no CDN
    plugins: requestLimitPlugins(limits), // depth, cost, partitions, mutations per request and per caller
    cors: false, // CORS is the allow-list in front of every route (httpSafety)
    multipart: false, // no file uploads: a multipart body is a form another site can post
    logging: yogaLogger(stderrLog), // a client's mistake is one info line, not a stack trace
    maskedErrors: {
      maskError(error, message, isDev) {
        const original = error instanceof GraphQLError ? error.originalError : undefined;
        // A refusal keeps its HTTP status: 401 for a missing or bad credential, 403 for a missing role.
        const status = refusalStatus(original);
        if (original instanceof TributaryError) {
          return new GraphQLError(original.message, { extensions: { code: original.code, ...(status ? { http: { status } } : {}) } });
        }
        return maskError(error, message, isDev);
      },
    },
  });
}
