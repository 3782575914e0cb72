// Console logins: the API token is exchanged once for a random session id kept in an HttpOnly,
// SameSite=Strict cookie, so the page never holds the token nor puts it in a URL.
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export const SESSION_COOKIE = 'brainstem_console';

/** Logins kept at once; the oldest is dropped past it (a loop of logins cannot grow memory). */
const MAX_SESSIONS = 256;

export class ConsoleSessions {
  /** Session id → expiry (seconds on `now`'s clock). */
  private readonly sessions = new Map<string, number>();
  /** Session id → what to call when it ends (its open WebSockets close), with why. */
  private readonly revoked = new Map<string, Set<(why: string) => void>>();

  constructor(
    readonly ttlS: number,
    private readonly now: () => number = () => performance.now() / 1000,
  ) {}

  /** A new session id, valid for ttlS. */
  create(): string {
    const id = randomBytes(32).toString('base64url');
    this.sessions.set(id, this.now() + this.ttlS);
    if (this.sessions.size > MAX_SESSIONS) this.end(this.sessions.keys().next().value!, 'too many logins');
    return id;
  }

  revoke(id: string | undefined): void {
    if (id !== undefined) this.end(id, 'logged out');
  }

  /** Ends every expired session, closing its WebSockets (a page left open past its login). */
  sweep(): void {
    const now = this.now();
    for (const [id, until] of this.sessions) if (until <= now) this.end(id, 'session expired');
  }

  private end(id: string, why: string): void {
    this.sessions.delete(id);
    const fns = this.revoked.get(id);
    this.revoked.delete(id);
    for (const fn of fns ?? []) fn(why);
  }

  /** Calls `fn` when the session `req` carries ends (logout, expiry); returns the unsubscribe. */
  onRevoke(req: IncomingMessage, fn: (why: string) => void): () => void {
    const id = ConsoleSessions.idOf(req);
    if (id === undefined) return () => undefined;
    const fns = this.revoked.get(id) ?? new Set();
    this.revoked.set(id, fns);
    fns.add(fn);
    return () => {
      fns.delete(fn);
      if (fns.size === 0 && this.revoked.get(id) === fns) this.revoked.delete(id);
    };
  }

  /** Whether `id` names a live session (an expired one is forgotten). */
  valid(id: string | undefined): boolean {
    if (id === undefined) return false;
    const until = this.sessions.get(id);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.end(id, 'session expired');
    return false;
  }

  /** The session id a request's cookie carries, if any. */
  static idOf(req: IncomingMessage): string | undefined {
    for (const part of (req.headers.cookie ?? '').split(';')) {
      const [k, v] = part.trim().split('=', 2);
      if (k === SESSION_COOKIE && v) return v;
    }
    return undefined;
  }

  /**
   * A WebSocket upgrade authenticated by its cookie: a live session and an Origin equal to the
   * Host (a page of another site cannot ride the cookie: cross-site WebSocket hijacking).
   */
  upgradeAllowed(req: IncomingMessage): boolean {
    const origin = req.headers.origin;
    const host = req.headers.host;
    if (!origin || !host || !this.valid(ConsoleSessions.idOf(req))) return false;
    try {
      return new URL(origin).host === host;
    } catch {
      return false;
    }
  }

  /** Set-Cookie value: the id for ttlS, or an expired one (logout). */
  cookie(id: string | null): string {
    const attrs = 'Path=/; HttpOnly; SameSite=Strict';
    return id === null
      ? `${SESSION_COOKIE}=; ${attrs}; Max-Age=0`
      : `${SESSION_COOKIE}=${id}; ${attrs}; Max-Age=${this.ttlS}`;
  }
}
