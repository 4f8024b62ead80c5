import { z } from "zod";
import { defineTriggerCheck } from "../trigger-check.js";

/** `at(instant)`: fires once the injected clock reaches the instant. */
export const atCheck = defineTriggerCheck({
  schema: z.object({ at: z.iso.datetime({ offset: true }) }),
  async check(args, { now }) {
    const at = new Date(args.at);
    if (now.getTime() >= at.getTime()) return { fired: true, payload: { at: at.toISOString() } };
    return { fired: false, detail: `waiting until ${at.toISOString()}` };
  },
});
