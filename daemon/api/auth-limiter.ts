// Slows token guessing: wrong API tokens (Bearer, ?token= on upgrades, console logins) are counted
// per address and all together; past a limit, requests presenting a token wait (429, Retry-After).
import type { IncomingMessage } from 'node:http';
import { tokenMatches } from './auth.js';
import { HttpError } from './http.js';

/** Wrong tokens from one address in WINDOW_MS after which its attempts wait (429). */
export const MAX_FAILED_TOKENS = 10;
/** Wrong tokens from all addresses together after which every attempt waits (guessing from many). */
export const MAX_FAILED_TOKENS_ALL = 100;
const WINDOW_MS = 10_000;
/** Addresses remembered at once; the oldest is forgotten past it. */
const MAX_ADDRESSES = 4096;

/**
 * The failed attempts of the last window, per address and all together: an address guessing
 * slows itself, not the operator's logins from elsewhere; many addresses together slow everyone.
 */
export class AuthLimiter {
  private readonly byAddress = new Map<string, number[]>();
  private all: number[] = [];

  /** `now` in milliseconds (tests inject a clock). */
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** Seconds `address` waits before its next attempt is heard, with the limit that holds it, or null. */
  private retryAfter(address: string): { wait: number; limit: number; who: string } | null {
    const t = this.now();
    const recent = (list: number[]) => list.filter((f) => t - f < WINDOW_MS);
    this.all = recent(this.all);
    const mine = recent(this.byAddress.get(address) ?? []);
    if (mine.length) this.byAddress.set(address, mine);
    else this.byAddress.delete(address);
    // The wait lasts until the failure that filled the limit leaves the window.
    const over = (list: number[], max: number) =>
      list.length < max ? 0 : Math.ceil((list[list.length - max]! + WINDOW_MS - t) / 1000);
    const own = over(mine, MAX_FAILED_TOKENS);
    if (own > 0) return { wait: own, limit: MAX_FAILED_TOKENS, who: 'from this address' };
    const everyone = over(this.all, MAX_FAILED_TOKENS_ALL);
    return everyone > 0 ? { wait: everyone, limit: MAX_FAILED_TOKENS_ALL, who: 'from all addresses' } : null;
  }

  /** The 429 for `address` while it waits (`what` names the check, e.g. "console login"), else null. */
  refusal(address: string, what: string): HttpError | null {
    const held = this.retryAfter(address);
    if (!held) return null;
    return new HttpError(
      429,
      `${what}: ${held.limit} wrong tokens ${held.who} within ${WINDOW_MS / 1000} s; try again in ${held.wait} s`,
      'rate_limit_error',
      undefined,
      { headers: { 'retry-after': String(held.wait) } },
    );
  }

  /**
   * Whether `presented` is the token (none presented: false, not counted). A wrong one counts
   * against the request's address; while it (or everyone) is held, throws the 429 before comparing.
   */
  check(req: IncomingMessage, presented: string | undefined, token: string, what: string): boolean {
    if (presented === undefined) return false;
    const address = req.socket.remoteAddress ?? '';
    const refused = this.refusal(address, what);
    if (refused) throw refused;
    if (tokenMatches(presented, token)) return true;
    this.failed(address);
    return false;
  }

  failed(address: string): void {
    const t = this.now();
    this.all.push(t);
    const mine = this.byAddress.get(address) ?? [];
    this.byAddress.delete(address); // re-inserted last: the map's order is oldest first
    this.byAddress.set(address, [...mine, t]);
    if (this.byAddress.size > MAX_ADDRESSES) this.byAddress.delete(this.byAddress.keys().next().value!);
  }
}
