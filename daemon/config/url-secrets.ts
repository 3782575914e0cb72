// Secrets inside config values: a URL's user name and password, and `secret` keys. They are
// redacted before a value reaches a message, since errors are printed, logged and pasted.
import { Shown } from '../../robot/common/validation/values.js';

/** mqtt://user:secret@host → mqtt://user:***@host (for logs and printed configs). */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = '***';
    return u.toString();
  } catch {
    // Not a URL to the parser, but it may still carry `user:pass@`.
    return url.replace(/(\/\/)[^/?#\s]*@/, '$1***@');
  }
}

/** A URL's user name and password, percent-decoded; undefined when either is not valid percent-encoding. */
export function urlCredentials(u: URL): { username: string; password: string } | undefined {
  try {
    return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
  } catch {
    return undefined;
  }
}

/** The value as a message may show it: secret keys as their length only, URLs without passwords. */
export function shownValue(value: unknown, secret: boolean): unknown {
  if (secret && value !== undefined && value !== null && value !== '') {
    const n = String(value).length;
    return new Shown(`<hidden, ${n} character${n === 1 ? '' : 's'}>`);
  }
  return typeof value === 'string' && value.includes('@') ? redactUrl(value) : value;
}
