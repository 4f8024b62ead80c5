// What a test answers in place of the outside world: secrets from a map, and the payloads of triggers.
import { ChainSecretBackend, EnvSecretBackend, SecretResolver, type SecretBackend } from "../executor/runtime/index.js";
import type { StepRef, TriggerPayload } from "./materialize-types.js";

/** A secret backend over the map a test gives. */
class MapSecretBackend implements SecretBackend {
  constructor(
    private readonly values: Readonly<Record<string, string>>,
    readonly name: string,
  ) {}
  get(name: string): Promise<string | undefined> {
    return Promise.resolve(Object.hasOwn(this.values, name) ? this.values[name] : undefined);
  }
}

/** Secrets from the map `what` (the function the test called) was given; without one, from the environment. */
export function secretsOf(map: Readonly<Record<string, string>> | undefined, what: string): SecretResolver {
  return new SecretResolver(
    map ? new MapSecretBackend(map, `the secrets given to ${what}`) : new ChainSecretBackend([new EnvSecretBackend()]),
  );
}

/** What a trigger yields by the test's resolver, through JSON as a stored payload goes. */
export async function payloadOf(
  resolver: { readonly resolve: TriggerPayload },
  trigger: { readonly kind: string; readonly args: Readonly<Record<string, unknown>> },
  step: StepRef,
): Promise<unknown> {
  const payload =
    typeof resolver.resolve === "function"
      ? await (resolver.resolve as (t: typeof trigger, s: StepRef) => unknown)(trigger, step)
      : resolver.resolve;
  return JSON.parse(JSON.stringify(payload ?? null)) as unknown;
}
