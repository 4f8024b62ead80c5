import { Kind } from "graphql";
import type { ASTVisitor, DocumentNode, GraphQLError, OperationDefinitionNode, SelectionSetNode, ValidationContext } from "graphql";
import { createGraphQLError, type Plugin } from "graphql-yoga";
import { DEFAULT_MAX_MUTATIONS } from "./limit-defaults.js";
import { fragmentsOf } from "./limits.js";

/**
 * Refuses a mutation operation with more than `maxMutations` root fields
 * (aliases and fragments counted) while validating, so none of them runs:
 * TOO_MANY_MUTATIONS.
 */
export function useMutationLimit(maxMutations: number = DEFAULT_MAX_MUTATIONS): Plugin {
  return {
    onValidate({ addValidationRule }) {
      addValidationRule(mutationCountRule(maxMutations));
    },
  };
}

export function mutationCountRule(maxMutations: number): (context: ValidationContext) => ASTVisitor {
  return (context) => ({
    OperationDefinition(node) {
      if (node.operation !== "mutation") return;
      const fields = rootFieldsOf(context.getDocument(), node);
      if (fields.length <= maxMutations) return;
      const name = node.name ? `Mutation "${node.name.value}"` : "The mutation";
      context.reportError(
        createGraphQLError(
          `${name} runs ${fields.length} mutation fields (${summarise(fields)}), more than the limit of ${maxMutations} per request; ` +
            `send them in several requests`,
          { nodes: [node], extensions: { code: "TOO_MANY_MUTATIONS", mutations: fields.length, maxMutations } },
        ) as GraphQLError,
      );
    },
  });
}

/**
 * The response keys (alias, else field name) of an operation's root fields,
 * fragments and inline fragments included; each key once, as graphql-js merges
 * same-keyed fields into one. `__typename` is no mutation.
 */
export function rootFieldsOf(document: DocumentNode, operation: OperationDefinitionNode): string[] {
  const fragments = fragmentsOf(document);
  const keys = new Map<string, string>();
  const seen = new Set<string>();
  const visit = (set: SelectionSetNode) => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value !== "__typename") keys.set(selection.alias?.value ?? selection.name.value, selection.name.value);
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        visit(selection.selectionSet);
      } else if (!seen.has(selection.name.value)) {
        // At the root every spread of a fragment adds the same fields: one visit is enough (and no cycle loops).
        seen.add(selection.name.value);
        const fragment = fragments.get(selection.name.value);
        if (fragment) visit(fragment.selectionSet);
      }
    }
  };
  visit(operation.selectionSet);
  return [...keys.values()];
}

/** `launchRun × 1000, clearPartitions × 2`. */
function summarise(fields: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const f of fields) counts.set(f, (counts.get(f) ?? 0) + 1);
  return [...counts].map(([f, n]) => (n === 1 ? f : `${f} × ${n}`)).join(", ");
}
