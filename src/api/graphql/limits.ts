import { Kind } from "graphql";
import type {
  ASTVisitor,
  DocumentNode,
  FieldNode,
  FragmentDefinitionNode,
  GraphQLError,
  GraphQLField,
  GraphQLSchema,
  OperationDefinitionNode,
  SelectionSetNode,
  ValidationContext,
  ValueNode,
} from "graphql";
// Errors made by yoga's createGraphQLError belong to the copy of graphql that yoga runs, so its error masking passes them
// through unchanged; the schema is walked by name and shape, never with graphql's instanceof-based helpers, for the same reason.
import { createGraphQLError, type Plugin } from "graphql-yoga";
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from "./limit-defaults.js";
import { PARTITION_LISTS } from "./partition-cost.js";

/**
 * Refuses operations deeper than `maxDepth` (a validation rule: QUERY_TOO_DEEP),
 * costlier than `maxCost` once the variables are known (QUERY_TOO_COSTLY), or
 * listing more than `maxPartitions` partitions (TOO_MANY_PARTITIONS), before a
 * resolver runs.
 */
export function useQueryLimits(limits: QueryLimits = DEFAULT_QUERY_LIMITS): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(depthLimitRule(limits.maxDepth));
    },
    onExecute({ args, setResultAndStopExecution }) {
      const error = costError(args, limits);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
    onSubscribe({ args, setResultAndStopExecution }) {
      const error = costError(args, limits);
      if (error) setResultAndStopExecution({ errors: [error] });
    },
  };
}

/** A graphql-js validation rule: each operation at most `maxDepth` field levels deep, fragments included. */
export function depthLimitRule(maxDepth: number): (context: ValidationContext) => ASTVisitor {
  return (context) => {
    const fragments = fragmentsOf(context.getDocument());
    return {
      OperationDefinition(node) {
        const deepest = deepestPath(node.selectionSet, { fragments, visits: 0 }, maxDepth + 1, new Set());
        if (deepest.length > maxDepth) {
          const name = node.name ? `Operation "${node.name.value}"` : "The query";
          context.reportError(
            createGraphQLError(
              `${name} nests fields more than ${maxDepth} levels deep (at ${deepest.join(".")}); ` +
                `ask for fewer nested levels, or split it into several queries`,
              { nodes: [node], extensions: { code: "QUERY_TOO_DEEP", maxDepth } },
            ) as GraphQLError,
          );
        }
      },
    };
  };
}

/**
 * Selections the limits look at per operation at most: fragments spread into
 * fragments can make a small document expand exponentially, and measuring it
 * must stay cheap. Past this the query counts as too costly.
 */
const MAX_VISITS = 100_000;

interface DepthWalk {
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  visits: number;
}

/**
 * The field names of the deepest path through a selection set, stopping once it
 * is `budget` long (so a huge query costs no more than the limit to measure).
 * A fragment spread already on the path counts as nothing: NoFragmentCycles reports it.
 */
function deepestPath(set: SelectionSetNode, walk: DepthWalk, budget: number, onPath: ReadonlySet<string>): string[] {
  let deepest: string[] = [];
  for (const selection of set.selections) {
    if (++walk.visits > MAX_VISITS) break;
    let path: string[] = [];
    if (selection.kind === Kind.FIELD) {
      const below = selection.selectionSet && budget > 1 ? deepestPath(selection.selectionSet, walk, budget - 1, onPath) : [];
      path = [selection.name.value, ...below];
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      path = deepestPath(selection.selectionSet, walk, budget, onPath);
    } else {
      const fragment = walk.fragments.get(selection.name.value);
      if (fragment && !onPath.has(fragment.name.value)) {
        path = deepestPath(fragment.selectionSet, walk, budget, new Set([...onPath, fragment.name.value]));
      }
    }
    if (path.length > deepest.length) deepest = path;
    if (deepest.length >= budget) break;
  }
  return deepest;
}

/** A cost estimate and the field path that multiplies it most. */
export interface QueryCost {
  cost: number;
  /** The list field with the largest item count along its path, e.g. `asset.partitions(first: 10000000)`. */
  widest: { path: string; items: number } | null;
  /** Partitions the operation lists (see PARTITION_LISTS), times the lists around each field that lists them. */
  partitions: number;
  /** How many fields list partitions, and the one that lists the most. */
  partitionLists: { fields: number; largest: { path: string; items: number } | null };
}

interface Walk {
  schema: GraphQLSchema;
  fragments: ReadonlyMap<string, FragmentDefinitionNode>;
  variables: Readonly<Record<string, unknown>>;
  defaultListSize: number;
  widest: { path: string; items: number } | null;
  visits: number;
  partitions: number;
  partitionLists: { fields: number; largest: { path: string; items: number } | null };
}

/**
 * Estimates how many fields an operation resolves: each field counts 1, times
 * the items of every list around it. A field with a `first` argument yields
 * `first` items: itself when it returns a list (`runs(first: 50)`), else the
 * list inside the page it returns (`partitions(first: 100) { nodes }`). Other
 * lists count `defaultListSize` items. Variables and argument defaults are
 * applied; fragments are followed (each spread once per path).
 */
export function queryCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Readonly<Record<string, unknown>>,
  defaultListSize: number,
): QueryCost {
  const root =
    operation.operation === "mutation"
      ? schema.getMutationType()
      : operation.operation === "subscription"
        ? schema.getSubscriptionType()
        : schema.getQueryType();
  const walk: Walk = {
    schema,
    fragments: fragmentsOf(document),
    variables,
    defaultListSize,
    widest: null,
    visits: 0,
    partitions: 0,
    partitionLists: { fields: 0, largest: null },
  };
  const scope: Scope | undefined = root ? { typeName: root.name, pageSize: undefined, path: "", around: 1, onPath: new Set() } : undefined;
  const cost = scope ? setCost(walk, operation.selectionSet, scope) : 0;
  return {
    cost: walk.visits > MAX_VISITS ? Infinity : cost,
    widest: walk.widest,
    partitions: walk.partitions,
    partitionLists: walk.partitionLists,
  };
}

/** QUERY_TOO_COSTLY for a request over the limit; undefined when it may run (or names no operation: graphql-js reports that). */
function costError(
  args: {
    schema: GraphQLSchema;
    document: DocumentNode;
    operationName?: string | null | undefined;
    variableValues?: Readonly<Record<string, unknown>> | null | undefined;
  },
  limits: QueryLimits,
): GraphQLError | undefined {
  const operation = operationOf(args.document, args.operationName ?? undefined);
  if (!operation) return undefined;
  const measured = queryCost(args.schema, args.document, operation, args.variableValues ?? {}, limits.defaultListSize);
  const { cost, widest } = measured;
  if (cost <= limits.maxCost) return measured.partitions <= limits.maxPartitions ? undefined : partitionsError(operation, measured, limits);
  const where = widest ? ` (${widest.path} asks for ${widest.items} items)` : "";
  const size = Number.isFinite(cost) ? `would resolve about ${cost} fields${where}` : `expands to more than ${MAX_VISITS} selections`;
  return createGraphQLError(
    `The query ${size}, more than the limit of ${limits.maxCost}; ` +
      `lower \`first\`, ask for fewer nested lists, or page through the results`,
    { nodes: [operation], extensions: { code: "QUERY_TOO_COSTLY", cost: Number.isFinite(cost) ? cost : null, maxCost: limits.maxCost } },
  ) as GraphQLError;
}

function partitionsError(operation: OperationDefinitionNode, measured: QueryCost, limits: QueryLimits): GraphQLError {
  const { fields, largest } = measured.partitionLists;
  const where = largest ? ` in ${fields} field${fields === 1 ? "" : "s"} (the most: ${largest.path} with ${largest.items})` : "";
  return createGraphQLError(
    `The query lists up to ${measured.partitions} partitions${where}, more than the limit of ${limits.maxPartitions} per request; ` +
      `ask for fewer pages or smaller ones (\`first\`), and page through the rest in later requests`,
    {
      nodes: [operation],
      extensions: { code: "TOO_MANY_PARTITIONS", partitions: measured.partitions, maxPartitions: limits.maxPartitions },
    },
  ) as GraphQLError;
}

/** Where a selection set sits: its type, the page size a `first` above it set, its path, and the items of the lists around it. */
interface Scope {
  typeName: string;
  pageSize: number | undefined;
  path: string;
  around: number;
  /** Fragments already spread on this path. */
  onPath: ReadonlySet<string>;
}

function setCost(walk: Walk, set: SelectionSetNode, scope: Scope): number {
  let cost = 0;
  for (const selection of set.selections) {
    if (++walk.visits > MAX_VISITS) break;
    if (selection.kind === Kind.FIELD) {
      cost += fieldCost(walk, selection, scope);
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      cost += setCost(walk, selection.selectionSet, { ...scope, typeName: selection.typeCondition?.name.value ?? scope.typeName });
    } else {
      const fragment = walk.fragments.get(selection.name.value);
      if (fragment && !scope.onPath.has(fragment.name.value)) {
        const onPath = new Set([...scope.onPath, fragment.name.value]);
        cost += setCost(walk, fragment.selectionSet, { ...scope, typeName: fragment.typeCondition.name.value, onPath });
      }
    }
  }
  return cost;
}

function fieldCost(walk: Walk, node: FieldNode, scope: Scope): number {
  const def = fieldOf(walk.schema, scope.typeName, node.name.value);
  if (!def) return node.name.value === "__typename" ? 0 : 1;
  const first = firstOf(def, node, walk.variables);
  const list = isList(def.type);
  const items = list ? (first ?? scope.pageSize ?? walk.defaultListSize) : 1;
  const path = `${scope.path ? `${scope.path}.` : ""}${node.name.value}${first === undefined ? "" : `(first: ${first})`}`;
  const around = scope.around * items;
  if (list && (!walk.widest || around > walk.widest.items)) walk.widest = { path, items: around };
  const listsPartitions = PARTITION_LISTS[`${scope.typeName}.${node.name.value}`];
  if (listsPartitions) {
    const listed = scope.around * listsPartitions((name) => argumentOf(def, node, name, walk.variables));
    walk.partitions += listed;
    walk.partitionLists.fields++;
    if (!walk.partitionLists.largest || listed > walk.partitionLists.largest.items) {
      walk.partitionLists.largest = { path: `${scope.path ? `${scope.path}.` : ""}${node.name.value}`, items: listed };
    }
  }
  const inner = node.selectionSet
    ? setCost(walk, node.selectionSet, {
        typeName: namedTypeOf(def.type),
        pageSize: list ? undefined : first,
        path,
        around,
        onPath: scope.onPath,
      })
    : list
      ? 1
      : 0;
  return 1 + items * inner;
}

/** The field's `first` argument as given (literal or variable) or defaulted; undefined when it has none. */
function firstOf(def: GraphQLField<unknown, unknown>, node: FieldNode, variables: Readonly<Record<string, unknown>>): number | undefined {
  const value = argumentOf(def, node, "first", variables);
  return typeof value === "number" && Number.isFinite(value) ? Math.max(0, value) : undefined;
}

/** An argument as given (literal or variable) or defaulted; undefined when the field has no such argument. */
function argumentOf(
  def: GraphQLField<unknown, unknown>,
  node: FieldNode,
  name: string,
  variables: Readonly<Record<string, unknown>>,
): unknown {
  const arg = def.args.find((a) => a.name === name);
  if (!arg) return undefined;
  const given = node.arguments?.find((a) => a.name.value === name)?.value;
  return given ? valueOf(given, variables) : arg.defaultValue;
}

/** Numbers, lists, input objects and variables; other literals are left out (undefined). */
function valueOf(node: ValueNode, variables: Readonly<Record<string, unknown>>): unknown {
  if (node.kind === Kind.VARIABLE) return variables[node.name.value];
  if (node.kind === Kind.INT) return Number(node.value);
  if (node.kind === Kind.LIST) return node.values.map((v) => valueOf(v, variables));
  if (node.kind === Kind.OBJECT) return Object.fromEntries(node.fields.map((f) => [f.name.value, valueOf(f.value, variables)]));
  if (node.kind === Kind.NULL) return null;
  return undefined;
}

/** Looks fields up by name (the introspection fields too) and unwraps types by shape. */
function fieldOf(schema: GraphQLSchema, typeName: string, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === "__schema") return schema.getQueryType()?.name === typeName ? introspectionField(schema, "__Schema") : undefined;
  if (name === "__type") return introspectionField(schema, "__Type");
  const type = schema.getType(typeName) as { getFields?: () => Record<string, GraphQLField<unknown, unknown>> } | undefined;
  return type?.getFields?.()[name];
}

function introspectionField(schema: GraphQLSchema, typeName: string): GraphQLField<unknown, unknown> | undefined {
  const type = schema.getType(typeName);
  return type ? ({ name: typeName, args: [], type } as unknown as GraphQLField<unknown, unknown>) : undefined;
}

type Wrapped = { ofType?: Wrapped; name?: string; toString(): string };

function isList(type: Wrapped): boolean {
  let t: Wrapped | undefined = type;
  while (t) {
    if (t.toString().startsWith("[")) return true;
    t = t.ofType;
  }
  return false;
}

function namedTypeOf(type: Wrapped): string {
  let t = type;
  while (t.ofType) t = t.ofType;
  return t.name ?? String(t);
}

export function fragmentsOf(document: DocumentNode): Map<string, FragmentDefinitionNode> {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
  return fragments;
}

/** The operation a request runs: the one named, or the only one; undefined when that is ambiguous (graphql-js reports it). */
export function operationOf(document: DocumentNode, name: string | undefined): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  return name === undefined ? (operations.length === 1 ? operations[0] : undefined) : operations.find((o) => o.name?.value === name);
}
