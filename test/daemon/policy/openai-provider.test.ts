// The `openai` provider against a second daemon's real /v1/chat/completions (a synthetic model
// with tool_choice "required"), through a local proxy that answers 429 first, and against a
// server that never answers. Backoff sleeps are injected: nothing here waits on the wall clock
// except the short per-attempt timeout.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendError } from '../../../daemon/api/http.js';
import { outputFailure } from '../../../daemon/api/serving-errors.js';
import { ToolCallError } from '../../../daemon/engine/tool-calls/errors.js';
import { OpenAiProvider, type OpenAiProviderOptions } from '../../../daemon/policy/providers/openai.js';
import { type DecisionRequest, ProviderError } from '../../../daemon/policy/providers/types.js';
import { policyTools } from '../../../daemon/policy/tools.js';
import { compileSchema } from '../../../robot/common/validation/json-schema.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { forward as forwardTo, serve } from '../../helpers/loopback-http.js';
import { synthTiny, type TinyModel } from '../../helpers/serving.js';

let model: TinyModel;
let d: TestDaemon;
const env = { POLICY_TEST_KEY: TEST_TOKEN };
const tools = policyTools(['arm'], ['top']);
const checks = new Map(tools.map((t) => [t.name, compileSchema(t.parameters)]));
const signal = new AbortController().signal;

before(async () => {
  model = await synthTiny(3);
  d = await startTestDaemon({
    models: { tiny: { path: model.path, threads: 1, context_length: 4096, keep_alive: -1 } },
  });
});

after(async () => {
  await d?.stop();
  model?.remove();
});

const png = Uint8Array.from(Buffer.from('iVBORw0KGgo=', 'base64'));

function request(seed: number): DecisionRequest {
  return {
    messages: [
      { role: 'system', text: 'You drive one arm. Reply with exactly one tool call.' },
      { role: 'user', content: [{ type: 'text', text: 'Put the block in the bowl.' }] },
    ],
    tools,
    limits: { maxTokens: 400, temperature: 1, seed },
  };
}

/** A provider of the test daemon's key at `baseUrl`, backoff waits recorded in `waits`. */
function provider(baseUrl: string, waits: number[], more: Partial<OpenAiProviderOptions> = {}): OpenAiProvider {
  const sleep = async (ms: number) => void waits.push(ms);
  return new OpenAiProvider({
    baseUrl,
    model: 'tiny',
    apiKeyEnv: 'POLICY_TEST_KEY',
    env,
    ...more,
    retry: { sleep, ...more.retry },
  });
}

/** Forwards a request to the test daemon. */
const forward = (req: IncomingMessage, res: ServerResponse) => forwardTo(req, res, d.http);

test('decisions from a second daemon: one schema-valid tool call each, usage and the history message', async () => {
  let t = 0;
  const p = provider(`${d.http}/v1`, [], { clock: () => (t += 10) });
  const seen = new Set<string>();
  for (let seed = 1; seed <= 3; seed++) {
    const dec = await p.decide(request(seed), signal);
    assert.equal(dec.provider, 'openai');
    assert.equal(dec.finishReason, 'tool_calls');
    assert.ok(dec.call.ok, JSON.stringify(dec.call));
    if (!dec.call.ok) return;
    seen.add(dec.call.name);
    assert.deepEqual(checks.get(dec.call.name)!(dec.call.arguments), [], `seed ${seed}: ${dec.raw}`);
    assert.equal(dec.toolCalls.length, 1);
    assert.equal(dec.call.id, dec.toolCalls[0]!.id);
    assert.deepEqual(dec.message, { role: 'assistant', text: '', toolCall: dec.toolCalls[0] });
    assert.ok(dec.usage.promptTokens > 100 && dec.usage.completionTokens > 0, JSON.stringify(dec.usage));
    assert.equal(dec.usage.prefilledTokens, dec.usage.promptTokens - dec.usage.cachedTokens!);
    assert.equal(dec.timing.attempts, 1);
    assert.equal(dec.timing.totalMs, 10);
    assert.equal(typeof dec.timing.prefillMs, 'number');
  }
  assert.ok(seen.size >= 1);
});

test('a 429 with Retry-After is retried after the server’s wait, then the answer comes through', async () => {
  const bodies: unknown[] = [];
  const proxy = await serve((req, res, n) => {
    if (n === 1) {
      req.resume();
      res.writeHead(429, { 'retry-after': '3', 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }));
      return;
    }
    forward(req, res).then((b) => bodies.push(JSON.parse(b.toString())));
  });
  try {
    const waits: number[] = [];
    const p = provider(proxy.url, waits);
    const req = request(2);
    req.messages.push({
      role: 'user',
      content: [{ type: 'image', image: { mime: 'image/png', bytes: png }, label: 'top', detail: 'low' }],
    });
    // The daemon's engine reads text only; the provider's `images: 'text'` mode is for such servers.
    const text = provider(proxy.url, waits, { images: 'text' });
    const dec = await text.decide(req, signal);
    assert.deepEqual(waits, [3000]);
    assert.equal(dec.timing.attempts, 2);
    assert.equal(proxy.requests(), 2);
    assert.ok(dec.call.ok, JSON.stringify(dec.call));
    const sent = bodies[0] as { messages: { content: unknown }[]; tool_choice: string; tools: unknown[]; seed: number };
    assert.equal(sent.tool_choice, 'required');
    assert.equal(sent.seed, 2);
    assert.equal(sent.tools.length, tools.length);
    assert.deepEqual(sent.messages[2]!.content, [{ type: 'text', text: '[image not shown: top]' }]);
    // With images as URLs the same image is a data URL part; the text-only daemon refuses it (no retry on 400).
    await assert.rejects(p.decide(req, signal), (e: unknown) => {
      assert.ok(e instanceof ProviderError && e.kind === 'http', String(e));
      assert.equal(e.details.status, 400);
      assert.equal(e.details.attempts, 1);
      assert.match(
        e.message,
        /^openai provider: POST http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions: HTTP 400: messages\[2\]\.content\[0\]: this model takes text only/,
      );
      return true;
    });
    assert.equal(proxy.requests(), 3);
  } finally {
    await proxy.close();
  }
});

test('5xx without Retry-After backs off with the injected jitter; x-should-retry: false and 4xx are not retried', async () => {
  const answers = [503, 502, 200];
  const proxy = await serve((req, res, n) => {
    const status = answers[n - 1] ?? 200;
    if (status === 200) return void forward(req, res);
    req.resume();
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: `busy ${n}` } }));
  });
  try {
    const waits: number[] = [];
    const p = provider(proxy.url, waits, { retry: { baseDelayMs: 1000, maxDelayMs: 3000, random: () => 0.5 } });
    const dec = await p.decide(request(3), signal);
    // Equal jitter: cap/2 + 0.5·cap/2 with caps 1000, 2000.
    assert.deepEqual(waits, [750, 1500]);
    assert.equal(dec.timing.attempts, 3);
    answers.push(500, 500, 500, 500, 500, 500);
    await assert.rejects(p.decide(request(3), signal), (e: unknown) => {
      assert.ok(e instanceof ProviderError && e.kind === 'http');
      assert.equal(e.details.attempts, 5);
      assert.match(e.message, /HTTP 500: busy 8 \(gave up after 5 attempts\)$/);
      return true;
    });
    assert.deepEqual(waits, [750, 1500, 750, 1500, 2250, 2250]);
  } finally {
    await proxy.close();
  }
  const refusing = await serve((req, res, n) => {
    req.resume();
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (n === 1) headers['x-should-retry'] = 'false';
    res.writeHead(n === 1 ? 500 : 401, headers);
    res.end(JSON.stringify({ error: { message: n === 1 ? 'do not repeat' : 'bad key' } }));
  });
  try {
    const waits: number[] = [];
    const p = provider(refusing.url, waits);
    for (const re of [/HTTP 500: do not repeat$/, /HTTP 401: bad key$/])
      await assert.rejects(
        p.decide(request(1), signal),
        (e: unknown) => e instanceof ProviderError && re.test(e.message),
      );
    assert.equal(refusing.requests(), 2);
    assert.deepEqual(waits, []);
  } finally {
    await refusing.close();
  }
});

test('a brainstem server refusing its model’s output (model_output_error): a malformed decision, not an error', async () => {
  const raw = '<tool_call>{"name": "move_to", "arguments": {"target": ';
  const server = await serve((req, res) => {
    req.resume();
    sendError(res, outputFailure(new ToolCallError('unclosed_tag', 'the output ended inside <tool_call>', raw)));
  });
  try {
    const dec = await provider(server.url, []).decide(request(1), signal);
    assert.equal(server.requests(), 1);
    assert.equal(dec.raw, raw);
    assert.equal(dec.finishReason, 'error');
    assert.deepEqual(dec.call, {
      ok: false,
      code: 'json',
      message: "the model's output is invalid (unclosed_tag): the output ended inside <tool_call>",
    });
    assert.deepEqual(dec.message, { role: 'assistant', text: raw });
  } finally {
    await server.close();
  }
});

test('a server that never answers: a clear timeout error after a bounded number of attempts', async () => {
  const silent = await serve(() => undefined);
  try {
    const waits: number[] = [];
    const p = provider(silent.url, waits, { timeoutMs: 100, retry: { maxRetries: 2, random: () => 0 } });
    await assert.rejects(p.decide(request(1), signal), (e: unknown) => {
      assert.ok(e instanceof ProviderError && e.kind === 'timeout', String(e));
      assert.equal(e.details.attempts, 3);
      assert.equal(
        e.message,
        `openai provider: POST ${silent.url}/chat/completions: no answer within 100 ms (gave up after 3 attempts)`,
      );
      return true;
    });
    assert.equal(silent.requests(), 3);
    assert.deepEqual(waits, [500, 1000]);
    // The caller's cancel ends it at once, without retries.
    const ac = new AbortController();
    const pending = p.decide(request(1), ac.signal);
    setImmediate(() => ac.abort());
    await assert.rejects(pending, (e: unknown) => e instanceof ProviderError && e.kind === 'aborted');
  } finally {
    await silent.close();
  }
});

test('configuration errors name the option', () => {
  assert.throws(
    () => new OpenAiProvider({ baseUrl: 'http://x/v1', model: 'm', apiKeyEnv: 'NOPE_KEY', env: {} }),
    /openai provider: apiKeyEnv: the environment variable NOPE_KEY is not set/,
  );
  assert.throws(
    () => new OpenAiProvider({ baseUrl: 'ftp://x', model: 'm' }),
    /baseUrl: must be an http\(s\) URL, got "ftp:\/\/x"/,
  );
});
