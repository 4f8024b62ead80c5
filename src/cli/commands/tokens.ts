import type { Command } from "commander";
import { DEFAULT_TOKEN_LIFETIME } from "../access-inputs.js";
import type { GlobalOptions } from "../settings.js";

export interface TokensCreateOptions {
  user?: string;
  service?: string;
  expires: string;
  description?: string;
  json?: boolean;
}

/** `tributary tokens …`: API tokens of users and service accounts, sent as `Authorization: Bearer <token>`. */
export function registerTokens(program: Command): void {
  const tokens = program
    .command("tokens")
    .description("Create, list and revoke API tokens (on the configured database); a token is shown once, when created");
  tokens
    .command("create")
    .description("Create an API token for a user or a service account and print it (once)")
    .option("--user <name>", "the user the token acts as")
    .option("--service <name>", "the service account the token acts as")
    .option("--expires <lifetime>", 'how long it works: e.g. 30d, 12h, or "never"', DEFAULT_TOKEN_LIFETIME)
    .option("--description <text>", "what the token is for, shown in listings")
    .option("--json", "machine-readable output: {token, id, prefix, expiresAt}")
    .action(async (opts: TokensCreateOptions, cmd: Command) => {
      // Loaded on use, so `--help` and other commands start fast.
      const { runTokensCreate } = await import("./tokens.action.js");
      await runTokensCreate(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  tokens
    .command("list")
    .description("List API tokens (never the tokens themselves): prefix, owner, description, created, expires, last used, revoked")
    .option("--user <name>", "only the tokens of this user or service account")
    .option("--json", "machine-readable output")
    .action(async (opts: { user?: string; json?: boolean }, cmd: Command) => {
      const { runTokensList } = await import("./tokens.action.js");
      await runTokensList(opts, cmd.optsWithGlobals<GlobalOptions>());
    });
  tokens
    .command("revoke <id-or-prefix>")
    .description("Revoke an API token by its id or prefix (as listed): it stops working at once")
    .option("--json", "machine-readable output")
    .action(async (ref: string, opts: { json?: boolean }, cmd: Command) => {
      const { runTokensRevoke } = await import("./tokens.action.js");
      await runTokensRevoke(ref, opts, cmd.optsWithGlobals<GlobalOptions>());
    });
}
