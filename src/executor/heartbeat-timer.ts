/** Every `intervalMs`, sends what `steps()` lists (when it lists any), with one call in flight at a time. */
export class HeartbeatTimer {
  private readonly timer: NodeJS.Timeout;
  private inFlight = false;

  constructor(
    intervalMs: number,
    private readonly steps: () => readonly { stepId: number; tryNumber: number }[],
    private readonly send: (steps: readonly { stepId: number; tryNumber: number }[]) => Promise<void> | void,
    private readonly onError: (err: unknown, what: string) => void,
  ) {
    this.timer = setInterval(() => this.beat(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private beat(): void {
    if (this.inFlight) return;
    const steps = this.steps();
    if (steps.length === 0) return;
    this.inFlight = true;
    Promise.resolve()
      .then(() => this.send(steps))
      .catch((err: unknown) => this.onError(err, "sending heartbeats"))
      .finally(() => {
        this.inFlight = false;
      });
  }
}
