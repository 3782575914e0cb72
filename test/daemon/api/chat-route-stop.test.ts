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
}

test('a stream blocked on a client that stopped reading ends when the registry stops', async () => {
  const stopping = new AbortController();
  let closed = false;
  const chat = {
    stopping: stopping.signal,
    modelName: () => 'm',
    run: async function* () {
      try {
        // As the real service: the registry's stop ends the generation (through its lease).
        for (let i = 0; !stopping.signal.aborted; i++) yield { type: 'content', text: `token ${i}` };
        throw new Error('the daemon is stopping');
      } finally {
        closed = true;
      }
    },
  } as unknown as ChatService;
  const routes = new HttpRoutes();
  registerChatRoute(routes, chat);
  const match = routes.match('POST', '/v1/chat/completions');
  assert.ok('route' in match);
  const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true });
  const req = Object.assign(Readable.from([Buffer.from(body)]), { headers: {} }) as unknown as IncomingMessage;
  const res = new StalledResponse();
  const handled = Promise.resolve(
    match.route.handler(
      req,
      res as unknown as ServerResponse,
      {
        url: new URL('http://localhost/v1/chat/completions'),
        params: {},
        log: { debug() {}, info() {}, warn() {}, error() {} } as never,
        maxBodyBytes: 1 << 20,
        authenticated: true,
        maxJsonDepth: 64,
      } as never,
    ),
  );
  let done = false;
  void handled.then(() => (done = true));
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  assert.equal(done, false, 'waiting for the client to read');
  assert.equal(res.writes, 1, 'one write, then the wait for drain');
  stopping.abort();
  await handled;
  assert.ok(closed, 'the generation was closed');
  assert.ok(res.writableEnded, 'the response was ended');
});
