// The rules for a provider's base URL and the form a URL takes in messages. A key belongs in
// api_key_env, never in the URL: fetch refuses URLs with credentials, and a URL is repeated in
// errors, events, logs and episode records. Messages show URLs without userinfo, query or fragment.

/** Why `text` is not a usable API root (http(s), no credentials, no query or fragment), or null. */
export function baseUrlProblem(text: string): string | null {
  if (!URL.canParse(text)) return 'must be an http(s) URL';
  const u = new URL(text);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http(s) URL';
  if (u.username !== '' || u.password !== '')
    return 'must not hold a user name or password (put the key in an environment variable named by api_key_env)';
  // The path /chat/completions is appended to it: a query or fragment would swallow it.
  if (u.search !== '' || u.hash !== '') return 'must not have a query string or fragment';
  return null;
}

/** `url` without user name, password, query and fragment (each marked as left out); as given when it has none. */
export function redactUrl(url: string): string {
  if (!URL.canParse(url)) return url.replace(/(\/\/)\S*@/, '$1[credentials]@').replace(/[?#].*$/s, '?[redacted]');
  const u = new URL(url);
  const hidden = u.username !== '' || u.password !== '';
  const cut = u.search !== '' || u.hash !== '';
  if (!hidden && !cut) return url;
  return `${u.protocol}//${hidden ? '[credentials]@' : ''}${u.host}${u.pathname}${cut ? '?[redacted]' : ''}`;
}

/** Every http(s) URL in `text` redacted (undici's messages quote the URL they refused). */
export function redactUrls(text: string): string {
  return text.replace(/\bhttps?:\/\/[^\s"'<>`]+/gi, (m) => redactUrl(m));
}

/** What a failed fetch says: the socket error's code or message, URLs redacted. */
export function fetchFailure(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return redactUrls(String(e.cause?.code ?? e.cause?.message ?? e.message));
}
