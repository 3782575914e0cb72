// When and how long to wait before asking a model server again: 429 and 5xx (unless the server
// says x-should-retry: false), timeouts and dropped connections; never another 4xx. The server's
// Retry-After wins over the jittered doubling backoff; the random source and sleep are injectable
// so tests neither wait nor depend on chance.
import { setTimeout as sleepTimer } from 'node:timers/promises';
import { backoffDelay } from '../../mqtt/backoff.js';

export interface RetryOptions {
  /** Retries after the first attempt (0 = none). */
  maxRetries: number;
  /** First backoff step; doubles per retry up to maxDelayMs. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the request fails instead. */
  maxRetryAfterMs: number;
  /** Uniform [0, 1) for the jitter. */
  random: () => number;
  sleep: (ms: number, signal: AbortSignal) => Promise<void>;
}

export const defaultSleep = (ms: number, signal: AbortSignal): Promise<void> => sleepTimer(ms, undefined, { signal });

export const DEFAULT_RETRY: RetryOptions = {
  maxRetries: 4,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
  maxRetryAfterMs: 120_000,
  random: Math.random,
  sleep: defaultSleep,
};

/** Whether an HTTP status may succeed when asked again. */
export function retryableStatus(status: number, headers: Headers): boolean {
  if (headers.get('x-should-retry') === 'false') return false;
  return status === 429 || status >= 500;
}

/** Retry-After as ms: delta-seconds or an HTTP date (relative to `now`, Unix ms); undefined if absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** The wait before retry `attempt` (1 = the first retry): the server's Retry-After, else jittered backoff. */
export function retryDelay(attempt: number, retryAfter: number | undefined, o: RetryOptions): number {
  return retryAfter ?? backoffDelay(attempt, o.baseDelayMs, o.maxDelayMs, o.random);
}
