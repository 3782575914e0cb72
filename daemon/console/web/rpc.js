// The page's JSON-RPC connection to /ws (authenticated by the session cookie): calls by id,
// notifications by method, and reconnection with the open handlers run again each time.
/** Close reasons of a console WebSocket whose login ended (daemon/console/sessions.ts). */
const SESSION_ENDED = ['logged out', 'session expired', 'too many logins'];

export class Rpc {
  constructor(onStatus) {
    this.url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
    this.onStatus = onStatus;
    this.pending = new Map();
    this.handlers = new Map();
    this.openHandlers = [];
    this.next = 1;
    this.ws = null;
    this.delay = 500;
    this.retry = undefined;
  }

  /** `fn(params)` for every notification `method`. */
  on(method, fn) {
    if (!this.handlers.has(method)) this.handlers.set(method, []);
    this.handlers.get(method).push(fn);
  }

  /** `fn()` on every (re)connection: subscriptions are per connection. */
  onOpen(fn) {
    this.openHandlers.push(fn);
    if (this.ws?.readyState === WebSocket.OPEN) fn();
  }

  connect() {
    // One connection at a time: a reconnect timer still pending, or a socket still open, is
    // superseded (a stale timer opened a second socket and left calls on one still connecting).
    clearTimeout(this.retry);
    const old = this.ws;
    const ws = new WebSocket(this.url);
    this.ws = ws;
    if (old && old.readyState <= WebSocket.OPEN) {
      old.close();
      this.failPending(); // every call in flight went out on the old socket
    }
    this.onStatus('connecting');
    let opened = false;
    ws.addEventListener('open', () => {
      opened = true;
      this.delay = 500;
      this.onStatus('open');
      for (const fn of this.openHandlers) fn();
    });
    ws.addEventListener('message', (e) => typeof e.data === 'string' && this.receive(e.data));
    ws.addEventListener('close', (e) => {
      if (this.ws !== ws) return; // superseded: the newer socket owns the calls and the status
      this.failPending();
      // The login ended (logout elsewhere, expiry): to the login page, not reconnecting forever.
      if (e.code === 1008 && SESSION_ENDED.includes(e.reason)) return location.assign('/');
      // Refused before it opened: the login may have ended while the page was away (a restart).
      if (!opened) this.checkSession();
      this.onStatus('closed');
      this.delay = Math.min(this.delay * 2, 8000);
      this.retry = setTimeout(() => this.connect(), this.delay);
    });
  }

  failPending() {
    for (const p of this.pending.values()) p.reject(new Error('connection closed'));
    this.pending.clear();
  }

  async checkSession() {
    try {
      const r = await fetch('/console/session', { cache: 'no-store' });
      if (r.status === 401) location.assign('/');
    } catch {
      // The daemon is down: keep retrying the connection.
    }
  }

  receive(text) {
    let m;
    try {
      m = JSON.parse(text);
    } catch {
      return;
    }
    if (m.method && m.id === undefined) {
      for (const fn of this.handlers.get(m.method) ?? []) {
        try {
          fn(m.params);
        } catch (err) {
          console.error(`${m.method} handler`, err);
        }
      }
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (m.error) p.reject(Object.assign(new Error(m.error.message), { code: m.error.code, data: m.error.data }));
    else p.resolve(m.result);
  }

  call(method, params = {}) {
    if (this.ws?.readyState !== WebSocket.OPEN) return Promise.reject(new Error('not connected to the daemon'));
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }
}

/** Calls `fn` now and every `ms` while the page is open; errors are shown by `onError`. A tick
 *  while the previous run is still pending is skipped: slow replies must not pile up requests. */
export function every(ms, fn, onError = (err) => console.warn(err)) {
  let running = false;
  const run = () => {
    if (running) return;
    running = true;
    Promise.resolve()
      .then(fn)
      .catch(onError)
      .finally(() => (running = false));
  };
  run();
  return setInterval(run, ms);
}
