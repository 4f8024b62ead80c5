import SchemaBuilder from "@pothos/core";
import type { Guard } from "../../access/index.js";
import type { ApiServices } from "../services.js";

/** What resolvers see: the API's services, and the request's Guard (its caller and the one authorisation decision). */
export type ApiContext = ApiServices & { readonly guard: Guard };

export const builder = new SchemaBuilder<{
  Context: ApiContext;
  Scalars: {
    JSON: { Input: unknown; Output: unknown };
    DateTime: { Input: Date; Output: Date };
  };
}>({});

builder.scalarType("JSON", {
  description: "Any JSON value",
  serialize: (v) => v,
  parseValue: (v) => v,
});

builder.scalarType("DateTime", {
  description: "An instant, as an ISO 8601 string in UTC",
  serialize: (v) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString()),
  parseValue: (v) => {
    const d = new Date(String(v));
    if (Number.isNaN(d.getTime())) throw new TypeError(`"${String(v)}" is not an ISO 8601 instant`);
    return d;
  },
});
