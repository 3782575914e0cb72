// What the `openai` provider refuses to do for a server: read an answer past its byte cap, follow
// a redirect (re-posting the prompt to another origin), send a URL with credentials, or retry a
// request fetch will not send. Fake loopback servers; backoff sleeps are only recorded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { providerParams } from '../../../daemon/policy/episode/provider-spec.js';
import { OpenAiProvider, type OpenAiProviderOptions } from '../../../daemon/policy/providers/openai.js';
import { redactUrl, redactUrls } from '../../../daemon/policy/providers/provider-url.js';
import { type DecisionRequest, ProviderError } from '../../../daemon/policy/providers/types.js';
import type { Issue } from '../../../robot/common/validation/issue.js';
import { serve } from '../../helpers/loopback-http.js';

const signal = new AbortController().signal;
const req: DecisionRequest = { messages: [{ role: 'system', text: 'one tool call' }], tools: [] };
const answer = JSON.stringify({
  choices: [{ message: { content: '{"name": "get_state", "arguments": {}}' }, finish_reason: 'stop' }],
});

function provider(baseUrl: string, waits: number[], more: Partial<OpenAiProviderOptions> = {}): OpenAiProvider {
  const sleep = async (ms: number) => void waits.push(ms);
  return new OpenAiProvider({ baseUrl, model: 'm', ...more, retry: { sleep, ...more.retry } });
}

/** The rejection of `p`, checked to be a ProviderError. */
async function failure(p: Promise<unknown>): Promise<ProviderError> {
  const e = await p.then(
    () => assert.fail('expected a ProviderError'),
    (e: unknown) => e,
  );
  assert.ok(e instanceof ProviderError, String(e));
  return e;
}

test('an answer past maxResponseBytes fails at once, not retried, naming the cap and the URL; the read stops', async () => {
  let finished = false;
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const server = await serve((q, res) => {
    q.resume();
    res.writeHead(200, { 'content-type': 'application/json' });
    // 256 MiB, chunked (no Content-Length), written as fast as the client reads.
    let left = 4096;
    const more = () => {
      while (left > 0) {
        left--;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      finished = true;
      res.end();
    };
    more();
  });
  try {
    const waits: number[] = [];
    const e = await failure(provider(server.url, waits, { maxResponseBytes: 1 << 20 }).decide(req, signal));
    assert.equal(e.kind, 'http');
    assert.equal(e.details.attempts, 1);
    assert.equal(
      e.message,
      `openai provider: POST ${server.url}/chat/completions: the answer (HTTP 200) is larger than max_response_bytes, 1048576 bytes (1 MiB); the rest was not read`,
    );
    assert.equal(server.requests(), 1);
    assert.deepEqual(waits, []);
    assert.equal(finished, false);
  } finally {
    await server.close();
  }
});

test('a Content-Length over the cap fails before the body is read; an answer within it is a decision', async () => {
  const server = await serve((q, res, n) => {
    q.resume();
    if (n === 1) {
      res.writeHead(500, { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024) });
      res.write('{"error": ');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(answer);
  });
  try {
    const waits: number[] = [];
    const p = provider(server.url, waits, { maxResponseBytes: 4096 });
    const e = await failure(p.decide(req, signal));
    assert.match(e.message, /the answer \(HTTP 500\) is larger than max_response_bytes, 4096 bytes; the rest/);
    assert.equal(e.details.status, 500);
    assert.deepEqual(waits, []);
    const d = await p.decide(req, signal);
    assert.ok(d.call.ok && d.call.name === 'get_state', JSON.stringify(d.call));
  } finally {
    await server.close();
  }
});

test('max_response_bytes in policy.start: 1 KiB..256 MiB', () => {
  for (const [v, bad] of [
    [1024, false],
    [268_435_456, false],
    [1023, true],
    [268_435_457, true],
  ] as const) {
    const issues: Issue[] = [];
    providerParams.check({ kind: 'openai', base_url: 'http://x/v1', model: 'm', max_response_bytes: v }, 'p', issues);
    assert.equal(issues.length > 0, bad, `${v}: ${JSON.stringify(issues)}`);
    if (bad) assert.equal(issues[0]!.path, 'p.max_response_bytes');
  }
});

test('a redirect is not followed: the prompt never reaches the other origin, and nothing is retried', async () => {
  const other = await serve((q, res) => {
    q.resume();
    res.end(answer);
  });
  const server = await serve((q, res) => {
    q.resume();
    res.writeHead(307, { location: `${other.url}/chat/completions?token=SECRET` });
    res.end();
  });
  try {
    const waits: number[] = [];
    const e = await failure(provider(server.url, waits).decide(req, signal));
    assert.equal(e.kind, 'http');
    assert.equal(e.details.status, 307);
    assert.equal(e.details.attempts, 1);
    assert.equal(
      e.reason,
      `POST ${server.url}/chat/completions: HTTP 307: redirects are not followed (to ${other.url}/chat/completions?[redacted]); set base_url to the API root itself`,
    );
    assert.equal(other.requests(), 0);
    assert.equal(server.requests(), 1);
    assert.deepEqual(waits, []);
  } finally {
    await server.close();
    await other.close();
  }
});

test('base_url with a user name or password is refused at validation, the password never echoed', () => {
  for (const url of ['http://user:KEY123@127.0.0.1:9/v1', 'https://KEY123@api.example/v1', 'http://h/v1?key=KEY123']) {
    const issues: Issue[] = [];
    providerParams.check({ kind: 'openai', base_url: url, model: 'm' }, 'provider', issues);
    assert.equal(issues.length, 1, url);
    assert.equal(issues[0]!.path, 'provider.base_url');
    assert.match(
      issues[0]!.rule,
      url.includes('?') ? /must not have a query string/ : /must not hold a user name or password/,
    );
    assert.doesNotMatch(JSON.stringify(issues), /KEY123/);
    assert.throws(
      () => new OpenAiProvider({ baseUrl: url, model: 'm' }),
      (e: unknown) =>
        e instanceof ProviderError &&
        e.message.startsWith('openai provider: baseUrl: must') &&
        !/KEY123/.test(e.message),
    );
  }
  const ok: Issue[] = [];
  providerParams.check({ kind: 'openai', base_url: 'https://api.example:8443/v1/', model: 'm' }, 'provider', ok);
  assert.deepEqual(ok, []);
});

test('URLs in messages lose credentials, query and fragment', () => {
  assert.equal(redactUrl('http://u:p@h:8/v1?k=s#f'), 'http://[credentials]@h:8/v1?[redacted]');
  assert.equal(redactUrl('http://h/v1'), 'http://h/v1');
  assert.equal(redactUrl('http://u:p/q@h/v1'), 'http://[credentials]@h/v1');
  assert.equal(
    redactUrls('cannot: http://a:SECRET@h/v1/chat/completions, see https://x/y?t=SECRET.'),
    'cannot: http://[credentials]@h/v1/chat/completions, see https://x/y?[redacted]',
  );
});

test('a request fetch will not send (a bare TypeError) fails at once; a refused connection is retried', async () => {
  // The real fetch refusing a URL with credentials: its message quotes the URL, key included.
  const refusing: typeof fetch = (_url, init) => fetch('http://user:KEY123@127.0.0.1:9/v1/chat/completions', init);
  const waits: number[] = [];
  const e = await failure(provider('http://127.0.0.1:9/v1', waits, { fetch: refusing }).decide(req, signal));
  assert.equal(e.kind, 'request');
  assert.equal(e.details.attempts, 1);
  assert.deepEqual(waits, []);
  assert.match(e.reason, /^POST http:\/\/127\.0\.0\.1:9\/v1\/chat\/completions: Request cannot be constructed/);
  assert.doesNotMatch(e.message, /KEY123/);
  const closed = await serve(() => undefined);
  await closed.close();
  const n = await failure(provider(closed.url, waits, { retry: { maxRetries: 2 } }).decide(req, signal));
  assert.equal(n.kind, 'network');
  assert.equal(n.details.attempts, 3);
  assert.match(n.reason, /: ECONNREFUSED \(gave up after 3 attempts\)$/);
});

test('an API key that cannot be a header value is refused at construction, without echoing it', () => {
  assert.throws(
    () => new OpenAiProvider({ baseUrl: 'http://x/v1', model: 'm', apiKeyEnv: 'K', env: { K: 'KEY\n123' } }),
    (e: unknown) =>
      e instanceof ProviderError &&
      e.message ===
        'openai provider: apiKeyEnv: the value of K cannot be sent in a header (a line break or a non-Latin-1 character?)',
  );
});
