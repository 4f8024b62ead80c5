import { z } from "zod";
import { defineTriggerCheck } from "../trigger-check.js";

/**
 * `httpOk(url, { status })`: fires when a GET of the rendered URL answers with
 * the expected status (default 200). Another status is "not yet"; a network
 * error (refused, DNS) is a failure, recorded and retried by the triggerer.
 */
export const httpOkCheck = defineTriggerCheck({
  schema: z.object({ url: z.string().min(1), status: z.number().int().min(100).max(599).default(200) }),
  templateArgs: ["url"],
  async check(args, { signal }) {
    const url = new URL(args.url);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`${args.url} is not an http(s) URL`);
    const response = await fetch(url, { signal, redirect: "follow" });
    // The body is not needed; cancelling it frees the connection at once.
    await response.body?.cancel().catch(() => undefined);
    if (response.status === args.status) return { fired: true, payload: { url: args.url, status: response.status } };
    return { fired: false, detail: `${args.url} answered ${response.status}, waiting for ${args.status}` };
  },
});
