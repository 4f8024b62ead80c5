import { useEffect, useState } from "react";

/** The current time, ticking every `everyMs` while `active` (for running durations and the Gantt's "now" line). */
export function useNow(active: boolean, everyMs = 1_000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!active) return;
    setNow(Date.now());
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [active, everyMs]);
  return now;
}

/** From start to end, or to now while it has not ended; undefined before it starts. */
export function elapsedMs(startedAt: string | null | undefined, endedAt: string | null | undefined, now: number): number | undefined {
  if (!startedAt) return undefined;
  return (endedAt ? new Date(endedAt).getTime() : now) - new Date(startedAt).getTime();
}
