// The default limits of /graphql, apart from the plugins that apply them: settings and commands read them without
// loading GraphQL.

/** How much one GraphQL operation may ask for. */
export interface QueryLimits {
  /** Nested field levels: `{ assets { key } }` is 2 deep. */
  maxDepth: number;
  /** Estimated fields resolved (see queryCost in limits.ts). */
  maxCost: number;
  /** Items assumed for a list field without a `first` argument. */
  defaultListSize: number;
  /** Partitions listed, summed over every field that lists them (see PARTITION_LISTS) and over aliases. */
  maxPartitions: number;
}

/**
 * The limits of `/graphql`. 15 levels leave room for GraphiQL's introspection
 * query; a cost of 500 000 admits a 10 000-partition page with its statuses,
 * while one field asking for ten million rows is refused before it runs;
 * 20 000 partitions admit two full pages in one request, not 24 of them under aliases.
 */
export const DEFAULT_QUERY_LIMITS: QueryLimits = { maxDepth: 15, maxCost: 500_000, defaultListSize: 10, maxPartitions: 20_000 };

/** Root mutation fields one operation may run: `launchRun` ten times under ten aliases counts ten. */
export const DEFAULT_MAX_MUTATIONS = 10;

/** Mutations a caller may run: `perMinute` on average, up to `burst` at once. */
export interface MutationRate {
  perMinute: number;
  burst: number;
}

export const DEFAULT_MUTATION_RATE: MutationRate = { perMinute: 60, burst: 30 };
