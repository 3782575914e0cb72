// DNS rebinding guard: a page of evil.example whose name is rebound to this machine reaches the
// daemon as its own origin (Origin == Host), so requests are only served under names the daemon
// answers to. A name-less Host (an IP address) cannot be rebound; only DNS names are checked.
import { isIP } from 'node:net';
import { hostname } from 'node:os';
import { isLoopbackHost } from '../config/secret-strength.js';
import { HttpError } from './http.js';

/** name[:port] or [IPv6][:port]; anything else (userinfo, paths) is refused. */
const HOST_HEADER = /^(?:([a-z0-9_.-]+)|\[([0-9a-f:.]+)\])(?::\d{1,5})?$/i;

export class HostCheck {
  private readonly names: Set<string>;
  /** Off loopback clients come by address (any IP literal); on loopback only loopback ones exist. */
  private readonly anyAddress: boolean;

  constructor(bindHost: string, allowed: readonly string[], machine = hostname()) {
    this.anyAddress = !isLoopbackHost(bindHost);
    this.names = new Set([bindHost, machine, ...allowed].map((h) => h.toLowerCase()));
  }

  /** Whether a request with this Host header is served (none at all: not a browser, served). */
  allows(header: string | undefined): boolean {
    if (header === undefined) return true;
    const m = HOST_HEADER.exec(header);
    if (!m) return false;
    const name = (m[1] ?? m[2]!).toLowerCase().replace(/\.$/, '');
    if (isLoopbackHost(name)) return true;
    if (isIP(name)) return this.anyAddress;
    return this.names.has(name);
  }

  /**
   * Whether a WebSocket upgrade's Origin may open it: none (not a browser), the daemon's own
   * (Origin's host:port is the Host header) or one of `allowedOrigins`.
   */
  static originAllowed(
    origin: string | undefined,
    host: string | undefined,
    allowedOrigins: readonly string[],
  ): boolean {
    if (origin === undefined) return true;
    const o = origin.toLowerCase();
    if (allowedOrigins.some((a) => a.toLowerCase() === o)) return true;
    try {
      return host !== undefined && new URL(o).host === host.toLowerCase();
    } catch {
      return false; // "null" (sandboxed pages, files) and other non-URLs
    }
  }

  /** The 421 for a Host header that is not one of this daemon's names. */
  static refusal(header: string | undefined): HttpError {
    return new HttpError(
      421,
      `the Host header ${JSON.stringify(header)} is not a name of this daemon (loopback, server.host, this machine's hostname or server.allowed_hosts); refused against DNS rebinding`,
      'invalid_request_error',
      undefined,
      { code: 'host_not_allowed' },
    );
  }
}
