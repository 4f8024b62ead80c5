/**
 * dist/cli/ under the package directory `root` (default: this one) when the precompiled code there was built from
 * the sources as they are now; otherwise why not.
 */
export function precompiled(root?: URL): { readonly dir: URL } | { readonly stale: string };
