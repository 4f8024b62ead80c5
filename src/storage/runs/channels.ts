// Notification channels the run store writes to.

/** Channel the reconcilers listen on: a step became runnable, a run or step finished, a run was canceled. */
export const WAKE_CHANNEL = "tributary_wake";

/** Triggerers listen here: a new waiting trigger is checked at once, not at the next poll. */
export const TRIGGERS_CHANNEL = "tributary_triggers";
