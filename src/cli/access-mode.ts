import { InputError } from "../errors/index.js";
import type { AccessStore } from "../storage/index.js";

/** The flags that choose whether a server controls access. */
export interface AccessFlags {
  /** `--insecure-no-auth`: every request may do everything (warned about on every start). */
  readonly insecureNoAuth?: boolean | undefined;
  /** `--auth` (dev): control access on loopback too. */
  readonly auth?: boolean | undefined;
}

/** Whether a host name is this machine only, where `tributary dev` needs no sign-in. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || host === "[::1]" || /^127(\.\d{1,3}){3}$/.test(host);
}

/**
 * Whether the server runs without access control. `tributary api` always controls access unless told
 * `--insecure-no-auth`; `tributary dev` does not on loopback (a single developer's machine) unless told `--auth`,
 * and does on any other address, like `api`.
 */
export function runsOpen(command: "api" | "dev", host: string, flags: AccessFlags): boolean {
  if (flags.insecureNoAuth && flags.auth) throw new InputError("--auth and --insecure-no-auth contradict each other: give one");
  if (flags.insecureNoAuth) return true;
  return command === "dev" && isLoopback(host) && !flags.auth;
}

/** The warning a server without access control logs on every start. */
export function insecureWarning(host: string): string {
  return (
    `WARNING: access control is off (--insecure-no-auth): anyone who can reach ${host} may launch, cancel and clear runs, ` +
    "change pools and read every log; create an admin (`tributary users create admin --admin --password-stdin`) and drop the flag"
  );
}

/** A server that controls access needs someone to let in: at least one enabled admin without a team. */
export async function requireAdmin(store: Pick<AccessStore, "listPrincipals">): Promise<void> {
  const admins = (await store.listPrincipals()).filter((p) => !p.disabled && p.grants.some((g) => g.role === "admin" && g.team === null));
  if (admins.length === 0) {
    throw new InputError(
      "access control is on but no admin exists, so nobody could sign in: create one with " +
        "`tributary users create admin --admin --password-stdin` (against the same database), " +
        "or start with --insecure-no-auth to run without access control",
      { code: "ACCESS_NOT_CONFIGURED" },
    );
  }
}
