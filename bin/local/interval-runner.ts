// The local stand-in for an EventBridge schedule: runs a handler every `everyMs`, never two at once.
export class IntervalRunner {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly run: () => Promise<unknown>,
    private readonly everyMs: number,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.run()
        .catch(this.onError)
        .finally(() => {
          this.running = undefined;
        });
    }, this.everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
