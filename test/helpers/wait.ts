// Polling and deadline helpers for integration tests (deadlines only fail a test; they never
// assert how fast something was).
import { setTimeout as sleep } from 'node:timers/promises';

/** Rejects naming `what` when the promise does not settle in time. */
export { withTimeout as within } from '../../daemon/util/net.js';

/** Polls `probe` until it returns a value other than undefined. The deadline runs on the
 *  monotonic clock: a VM's wall clock can step forward (one CI run timed out after 0.85 s). */
export async function waitFor<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}
