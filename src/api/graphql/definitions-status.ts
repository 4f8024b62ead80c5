import type { DefinitionsStatus } from "../catalog.js";
import { builder } from "./builder.js";

const DefinitionsLoadStateEnum = builder.enumType("DefinitionsLoadState", {
  description:
    "LOADING: the first load of the definitions files has not finished (queries about assets answer with the definitions stored before, or wait for it when none are); LOADED: the graph is served; FAILED: the load itself failed",
  values: ["LOADING", "LOADED", "FAILED"] as const,
});

const DefinitionsStatusRef = builder.objectRef<DefinitionsStatus>("DefinitionsStatus").implement({
  description: "Whether the server has its definitions yet: poll it after a start before trusting an empty list of assets",
  fields: (t) => ({
    state: t.field({ type: DefinitionsLoadStateEnum, resolve: (s) => s.state }),
    loadedAt: t.field({
      type: "DateTime",
      nullable: true,
      description: "When the definitions in force were loaded (a server without a loader: when their version was stored)",
      resolve: (s) => s.loadedAt,
    }),
    version: t.int({ nullable: true, description: "The definitions version served; null before any is stored", resolve: (s) => s.version }),
    message: t.string({
      nullable: true,
      description: "What LOADING waits for and what is served meanwhile, or why the load FAILED",
      resolve: (s) => s.message,
    }),
  }),
});

builder.queryFields((t) => ({
  definitionsStatus: t.field({
    type: DefinitionsStatusRef,
    description: "The state of the definitions load; answers at once, unlike the queries that read the graph",
    resolve: (_root, _args, ctx) => ctx.assets.catalog.status(),
  }),
}));
