// What an operator does to a running episode besides stopping it: pause it before its next
// decision, give the model words (they lead the next observation), answer an operator check.
import type { CheckResult } from './checks.js';

export type OperatorEvent = 'paused' | 'resumed' | 'feedback';

export class OperatorChannel {
  paused = false;
  private readonly feedback: string[] = [];
  private resumeWaiter: (() => void) | null = null;
  private confirmWaiter: ((r: CheckResult) => void) | null = null;
  /** Set once the episode has ended: controls are no-ops. */
  closed = false;
  private released = false;

  constructor(private readonly emit: (type: OperatorEvent, fields?: Record<string, unknown>) => void) {}

  pause(): void {
    if (this.paused || this.closed) return;
    this.paused = true;
    this.emit('paused');
  }

  resume(): void {
    if (!this.paused) return;
    this.paused = false;
    this.emit('resumed');
    this.resumeWaiter?.();
  }

  addFeedback(text: string): void {
    this.feedback.push(text);
    this.emit('feedback', { text });
  }

  /** The feedback given since the last observation, in order. */
  takeFeedback(): string[] {
    return this.feedback.splice(0);
  }

  /** Resolves at once unless paused (and not released); else on resume or release. */
  async unpaused(): Promise<void> {
    if (this.paused && !this.released) await new Promise<void>((r) => (this.resumeWaiter = r));
    this.resumeWaiter = null;
  }

  /** Wakes a paused loop, and lets every later wait through (a stop: the loop must reach its end). */
  release(): void {
    this.released = true;
    this.resumeWaiter?.();
  }

  /** The operator's answer to a pending `done`; false when none is pending. */
  confirm(complete: boolean, reason?: string): boolean {
    const w = this.confirmWaiter;
    if (!w) return false;
    this.confirmWaiter = null;
    w({ complete, reason: `operator: ${reason ?? (complete ? 'confirmed' : 'rejected')}` });
    return true;
  }

  /** Waits for policy.confirm; rejects with `abortError` when the episode is stopped meanwhile. */
  awaitConfirm(signal: AbortSignal, abortError: () => Error): Promise<CheckResult> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(abortError());
      const onAbort = () => {
        this.confirmWaiter = null;
        reject(abortError());
      };
      // The listener goes with the answer: an episode's signal sees one check per `done`.
      this.confirmWaiter = (r) => {
        signal.removeEventListener('abort', onAbort);
        resolve(r);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
