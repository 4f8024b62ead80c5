/**
 * Resolves with the signal's name at the first SIGINT or SIGTERM. Until then it holds the event loop open: a
 * long-lived process must not end because every connection it had dropped at once (a database restart leaves no
 * socket and no referenced timer behind) — only a signal stops it.
 */
export function untilStopSignal(): Promise<"SIGINT" | "SIGTERM"> {
  return new Promise((resolve) => {
    const keepAlive = setInterval(() => undefined, 1 << 30);
    const stop = (signal: "SIGINT" | "SIGTERM") => {
      clearInterval(keepAlive);
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      resolve(signal);
    };
    const onInt = () => stop("SIGINT");
    const onTerm = () => stop("SIGTERM");
    process.once("SIGINT", onInt);
    process.once("SIGTERM", onTerm);
  });
}
