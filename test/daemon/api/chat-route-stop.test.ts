// A streamed chat whose client stopped reading (writes never drain) does not hold the daemon's
// stop: the route stops waiting when the model registry stops, and closes the generator.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { registerChatRoute } from '../../../daemon/api/openai/chat-route.js';
import { HttpRoutes } from '../../../daemon/api/routes.js';
import type { ChatService } from '../../../daemon/engine/chat-service.js';

/** A response whose socket never drains: every write reports a full buffer. */
class StalledResponse extends EventEmitter {
  destroyed = false;
  writableEnded = false;
  writableFinished = false;
  headersSent = false;
  writes = 0;
  writeHead() {
    this.headersSent = true;
    return this;
  }
  flushHeaders() {}
  setHeader() {}
  write() {
    this.writes++;
    return false;
  }
  end() {
    this.writableEnded = true;
  }
  destroy() {
    this.destroyed = true;
    this.emit('close');
  }
}

/** The chat route over a generation that yields until `stopping` aborts, to a stalled response. */
function stalledStream(stallMs: number, res = new StalledResponse()) {
  const stopping = new AbortController();
  const state = { closed: false, done: false };
  const chat = {
    stopping: stopping.signal,
    modelName: () => 'm',
    run: async function* (o: { signal: AbortSignal }) {
      try {
        // As the real service: the registry's stop (or the request's cancel) ends the generation.
        for (let i = 0; !stopping.signal.aborted && !o.signal.aborted; i++)
          yield { type: 'content', text: `token ${i}` };
        throw new Error('the daemon is stopping');
      } finally {
        state.closed = true;
      }
    },
  } as unknown as ChatService;
  const routes = new HttpRoutes();
  registerChatRoute(routes, chat);
  const match = routes.match('POST', '/v1/chat/completions');
  assert.ok('route' in match);
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
  const req = Object.assign(Readable.from([Buffer.from(body)]), { headers: {} }) as unknown as IncomingMessage;
  const warnings: string[] = [];
  const handled = Promise.resolve(
    match.route.handler(
      req,
      res as unknown as ServerResponse,
      {
        url: new URL('http://localhost/v1/chat/completions'),
        params: {},
        log: { debug() {}, info() {}, warn: (_o: unknown, m: string) => warnings.push(m), error() {} } as never,
        maxBodyBytes: 1 << 20,
        authenticated: true,
        maxJsonDepth: 64,
        stallMs,
      } as never,
    ),
  ).finally(() => (state.done = true));
  return { stopping, state, res, handled, warnings };
}

test('a stream blocked on a client that stopped reading ends when the registry stops', async () => {
  const { stopping, state, res, handled } = stalledStream(60_000);
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.equal(state.done, false, 'waiting for the client to read');
  assert.equal(res.writes, 1, 'one write, then the wait for drain');
  stopping.abort();
  await handled;
  assert.ok(state.closed, 'the generation was closed');
  assert.ok(res.writableEnded, 'the response was ended');
});

test('a client that reads nothing for http_stall_ms is cancelled: the generation closes and the connection goes', async () => {
  const { state, res, handled, warnings } = stalledStream(20);
  await handled;
  assert.ok(state.closed, 'the generation was closed (the model is free)');
  assert.ok(res.destroyed, 'the connection was closed');
  assert.equal(res.writes, 1, 'nothing more was written to it');
  assert.match(warnings.join('\n'), /the client kept the reply waiting for server\.http_stall_ms in all; cancelled/);
});

/** A client that reads a little now and then: each write waits a few milliseconds for drain. */
class TrickleResponse extends StalledResponse {
  override write() {
    this.writes++;
    setTimeout(() => this.emit('drain'), 5);
    return false;
  }
}

test('a client that reads a trickle is cancelled once its waits add up to http_stall_ms', {
  timeout: 10_000,
}, async () => {
  const { state, res, handled, warnings } = stalledStream(40, new TrickleResponse());
  await handled;
  assert.ok(state.closed, 'the generation was closed (the model is free)');
  assert.ok(res.destroyed, 'the connection was closed');
  assert.ok(res.writes > 1, `each wait alone was short: ${res.writes} writes`);
  assert.match(warnings.join('\n'), /kept the reply waiting for server\.http_stall_ms in all/);
});
