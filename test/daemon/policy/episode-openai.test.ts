// The `openai` provider through a whole episode: one daemon runs the episode on a simulated yam
// (started with policy.start over the WebSocket API), a second serves a synthetic model on its
// real /v1/chat/completions, and a loopback proxy between them answers the first request 429 and
// leaves the second unanswered (a timeout) before it forwards. The same decision is retried until
// it comes through; later decisions carry the history as OpenAI messages over HTTP.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { forward, serve } from '../../helpers/loopback-http.js';
import { synthTiny } from '../../helpers/serving.js';
import { episodeEvents, episodeFinished, startRig, waitReady } from '../robots/harness.js';

const DECISIONS = 3;
/** Long enough for a forwarded decision of the tiny model on a loaded machine; the stall costs it once. */
const TIMEOUT_MS = 6000;
const NOT_YET = JSON.stringify({
  name: 'verdict',
  arguments: { complete: false, reason: 'the block is not in the bowl' },
});

test('an episode with the openai provider: a 429 and a timeout retried, the history sent over HTTP', async (t) => {
  const model = await synthTiny(7);
  t.after(() => model.remove());
  const server = await startTestDaemon({
    models: { tiny: { path: model.path, threads: 1, context_length: 8192, keep_alive: -1 } },
  });
  t.after(() => server.stop());
  const seen: { n: number; answer: '429' | 'silence' | 'forwarded'; body?: any }[] = [];
  const proxy = await serve((req, res, n) => {
    if (n === 1) {
      req.resume();
      seen.push({ n, answer: '429' });
      res.writeHead(429, { 'retry-after': '0', 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'slow down', type: 'rate_limit_error' } }));
      return;
    }
    if (n === 2) return void seen.push({ n, answer: 'silence' });
    // The proxy holds the server's key: the episode's daemon needs none.
    void forward(req, res, server.http, `Bearer ${TEST_TOKEN}`).then((b) =>
      seen.push({ n, answer: 'forwarded', body: JSON.parse(b.toString()) }),
    );
  });
  t.after(() => proxy.close());

  const rig = (await startRig(t, 'embedded', { robots: [{ id: 'arm1', robot: 'yam' }] }))!;
  await waitReady(rig, 'arm1');
  const r = await rig.rpc.call('policy.start', {
    robot: 'arm1',
    instruction: 'put the block in the bowl',
    provider: {
      kind: 'openai',
      base_url: proxy.url,
      model: 'tiny',
      timeout_ms: TIMEOUT_MS,
      max_retries: 3,
      context_tokens: 8192,
      images: 'text',
    },
    budget: { decisions: DECISIONS },
    check: { kind: 'verifier', provider: { kind: 'scripted', lines: Array(DECISIONS).fill(NOT_YET) } },
  });
  assert.equal(r.error, undefined, JSON.stringify(r.error));
  const id = r.result.id;
  const end = await episodeFinished(rig, id, 120_000);
  const all = episodeEvents(rig, id);
  const decisions = all.filter((e) => e.type === 'decision');
  assert.ok(['budget_exhausted', 'gave_up'].includes(end.state), `${end.state}: ${end.reason}`);
  if (end.state === 'budget_exhausted') assert.equal(decisions.length, DECISIONS);

  // Decision 1 took three attempts (429, no answer, answered); the others one each.
  assert.deepEqual(
    decisions.map((d) => d.timing.attempts),
    [3, ...Array(decisions.length - 1).fill(1)],
  );
  assert.equal(proxy.requests(), decisions.length + 2);
  assert.deepEqual(
    seen.slice(0, 2).map((s) => s.answer),
    ['429', 'silence'],
  );
  const bodies = seen.filter((s) => s.answer === 'forwarded').map((s) => s.body);
  assert.equal(bodies.length, decisions.length);
  for (const d of decisions) {
    assert.equal(d.finish_reason, 'tool_calls', d.raw);
    assert.ok(d.usage.promptTokens > 0 && !d.usage.estimated, JSON.stringify(d.usage));
  }
  for (const b of bodies) {
    assert.equal(b.tool_choice, 'required');
    assert.equal(b.model, 'tiny');
    assert.equal(b.stream, false);
  }
  // From decision 2 on, the request carries the earlier call and its result as a tool message.
  for (let i = 1; i < bodies.length; i++) {
    const msgs = bodies[i].messages;
    const call = msgs.find((m: any) => m.role === 'assistant')?.tool_calls?.[0];
    assert.ok(call, JSON.stringify(msgs));
    assert.equal(call.function.name, JSON.parse(decisions[0].raw).name);
    const result = msgs.find((m: any) => m.role === 'tool');
    assert.equal(result.tool_call_id, call.id);
  }
  const requests = all.filter((e) => e.type === 'request');
  assert.equal(requests.length, decisions.length);
  for (const q of requests) assert.notEqual(q.tool, null, JSON.stringify(q));
});
