// Shared steps of the console's browser tests: a page on the test daemon that records every
// request (URLs, and any that left the daemon's origin, which are refused) and page errors.
import type { Browser, Page } from 'playwright-core';
import { TEST_TOKEN } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';

export interface ConsolePage {
  page: Page;
  /** Every URL the page asked for (HTTP and WebSocket), in order. */
  urls: string[];
  /** Requests to anything but the daemon (refused: the console must need no network). */
  offsite: string[];
  errors: string[];
}

/** A fresh context and page; `block` lists paths of the daemon answered with a network error. */
export async function openConsole(browser: Browser, base: string, block: string[] = []): Promise<ConsolePage> {
  const context = await browser.newContext();
  const page = await context.newPage();
  const origin = new URL(base).origin;
  const out: ConsolePage = { page, urls: [], offsite: [], errors: [] };
  page.on('request', (r) => out.urls.push(r.url()));
  page.on('websocket', (ws) => out.urls.push(ws.url()));
  page.on('pageerror', (e) => out.errors.push(e.message));
  page.on('console', (m) => m.type() === 'error' && out.errors.push(m.text()));
  await context.route('**/*', (route) => {
    const url = new URL(route.request().url());
    if (url.origin !== origin) {
      out.offsite.push(url.href);
      return route.abort('internetdisconnected');
    }
    if (block.includes(url.pathname)) return route.abort('failed');
    return route.continue();
  });
  return out;
}

/** Logs in through the form; resolves once the console page is shown. */
export async function logIn(c: ConsolePage, base: string, token = TEST_TOKEN): Promise<void> {
  await c.page.goto(`${base}/`);
  await c.page.fill('#token', token);
  await Promise.all([c.page.waitForURL(`${base}/`), c.page.click('button[type=submit]')]);
  await c.page.waitForSelector('#estop');
}

/** Polls an expression in the page until it is not undefined/null/false. */
export function pageValue<T>(c: ConsolePage, expr: string, what: string, timeoutMs = 30_000): Promise<T> {
  return waitFor(
    async () => {
      // Before the module has run its handles are missing: not yet, rather than an error.
      const v = await c.page.evaluate(expr).catch(() => undefined);
      return v === null || v === undefined || v === false ? undefined : (v as T);
    },
    `${what} (page errors: ${c.errors.join(' | ') || 'none'})`,
    timeoutMs,
    100,
  );
}

/** The page's JSON-RPC requests on their way to the daemon (both the console's and the e-stop's socket). */
export interface RpcTap {
  /** Each request's method, in the order sent. */
  sent: string[];
  /** Requests of these methods are held back, as on a link that delivers nothing, until released. */
  hold: Set<string>;
  /** Passes the held requests on to the daemon. */
  release(): void;
}

/** Routes the page's /ws through the test; call before the page opens it (before logIn). */
export async function tapRpc(c: ConsolePage): Promise<RpcTap> {
  const held: (() => void)[] = [];
  const tap: RpcTap = {
    sent: [],
    hold: new Set(),
    release: () => {
      for (const send of held.splice(0)) send();
    },
  };
  await c.page.context().routeWebSocket(/\/ws$/, (ws) => {
    const server = ws.connectToServer();
    ws.onMessage((m) => {
      const method = typeof m === 'string' ? (JSON.parse(m).method as string | undefined) : undefined;
      if (method) tap.sent.push(method);
      if (method && tap.hold.has(method)) held.push(() => server.send(m));
      else server.send(m);
    });
  });
  return tap;
}
