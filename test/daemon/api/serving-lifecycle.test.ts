// Model lifecycle through the running daemon and the real engine (tiny synthetic model): the
// WebSocket methods, keep-alive unloads, busy over WebSocket, cancel mid-stream, and a client that
// disconnects mid-stream (generation stops, the model's turn and session are freed), /health per
// model and the serving metrics.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { parsePrometheus } from '../../helpers/prometheus.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { synthTiny, type TinyModel } from '../../helpers/serving.js';
import { waitFor } from '../../helpers/wait.js';

let model: TinyModel;
let d: TestDaemon;
const ASK = [{ role: 'user', content: 'Move the left arm up.' }];
const auth = { authorization: `Bearer ${TEST_TOKEN}` };

before(async () => {
  model = await synthTiny(5);
  const profile = { path: model.path, threads: 1, context_length: 2048 };
  d = await startTestDaemon({
    engine: { keep_alive: -1 },
    models: { tiny: { ...profile }, solo: { ...profile, queue_size: 0 }, brief: { ...profile, keep_alive: '300ms' } },
  });
});

after(async () => {
  await d?.stop();
  model?.remove();
});

async function rpc(t: { after(fn: () => unknown): void }): Promise<RpcTestClient> {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => c.close());
  return c;
}

/** The model is idle again: no running or waiting request, no session in use. */
const idle = (name: string) =>
  waitFor(() => {
    const s = d.models.statusOf(name);
    return s.queue.active === 0 && s.queue.waiting === 0 && s.sessions.in_use === 0 ? s : undefined;
  }, `${name} to be idle`);

test('WebSocket: models.list, models.load with progress, chat with deltas and a final result, models.status, models.unload', async (t) => {
  const c = await rpc(t);
  const list = await c.call('models.list');
  assert.deepEqual(
    list.result.models.map((m: any) => [m.name, m.state]),
    [
      ['tiny', 'unloaded'],
      ['solo', 'unloaded'],
      ['brief', 'unloaded'],
    ],
  );

  const loaded = await c.call('models.load', { model: 'tiny' });
  assert.equal(loaded.result.state, 'loaded');
  assert.equal(loaded.result.engine.arch, 'qwen3_moe');
  assert.equal(loaded.result.profile.context_length, 2048);
  assert.equal(loaded.result.profile.top_k, 4);
  const progress = c.notifications.filter((n) => n.method === 'models.progress').map((n) => n.params);
  assert.deepEqual(
    progress.map((p) => p.stage ?? p.state),
    ['prepare', 'tokenizer', 'weights', 'session', 'loaded'],
  );
  assert.ok(progress.every((p, i) => i === 0 || p.progress >= progress[i - 1].progress));

  const before = c.notifications.length;
  const reply = await c.call(
    'chat',
    { model: 'tiny', messages: ASK, max_tokens: 12, seed: 4, request_id: 'turn-1' },
    60_000,
  );
  const r = reply.result;
  assert.equal(r.request_id, 'turn-1');
  const deltas = c.notifications.slice(before).filter((n) => n.method === 'chat.delta');
  assert.ok(deltas.every((n) => n.params.request_id === 'turn-1'));
  assert.equal(deltas.map((n) => n.params.delta.content).join(''), r.message.content);
  assert.ok(['stop', 'length'].includes(r.finish_reason));
  assert.equal(r.usage.completion_tokens <= 12, true);
  assert.equal(r.timings.decode_tokens, r.usage.completion_tokens - 1);
  assert.ok(r.timings.time_to_first_token_ms >= 0 && r.timings.prefill_tokens > 0);

  const quiet = c.notifications.length;
  const silent = (
    await c.call('chat', { model: 'tiny', messages: ASK, max_tokens: 4, stream: false, request_id: 'quiet' }, 60_000)
  ).result;
  assert.equal(
    c.notifications.slice(quiet).filter((n) => n.method === 'chat.delta').length,
    0,
    'stream: false sends no deltas',
  );
  assert.equal(typeof silent.message.content, 'string');

  // A forced tool call: the final message names it with the id its delta carried.
  const toolsAt = c.notifications.length;
  const tools = [
    {
      type: 'function',
      function: {
        name: 'move',
        parameters: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
      },
    },
  ];
  const called = (
    await c.call(
      'chat',
      { model: 'tiny', messages: ASK, tools, tool_choice: 'required', max_tokens: 200, seed: 3, request_id: 'tool' },
      60_000,
    )
  ).result;
  const streamedIds = c.notifications
    .slice(toolsAt)
    .filter((n) => n.method === 'chat.delta' && n.params.delta.tool_calls)
    .map((n) => n.params.delta.tool_calls[0].id);
  assert.equal(called.finish_reason, 'tool_calls');
  assert.ok(streamedIds.length > 0);
  assert.deepEqual(
    called.message.tool_calls.map((t: { id: string }) => t.id),
    streamedIds,
  );

  const status = (await c.call('models.status', { model: 'tiny' })).result;
  const m = status.models[0];
  assert.equal(m.state, 'loaded');
  assert.deepEqual(m.queue, { active: 0, waiting: 0, capacity: 8, per_client: 2 });
  assert.equal(m.sessions.in_use, 0);
  assert.ok(m.memory.kv_cache_bytes > 0 && m.memory.weight_file_bytes > 1_000_000, JSON.stringify(m.memory));
  // Resident, so its weights are mapped in the background (models.<name>.prefault unset).
  const mapped = m.memory.weights_mapped;
  assert.ok(mapped && mapped.total_bytes > 0 && mapped.done_bytes <= mapped.total_bytes, JSON.stringify(m.memory));
  assert.ok(status.memory.rss_bytes > 0);
  if (process.platform === 'linux') assert.ok(status.memory.rss_file_bytes > 0 && status.memory.rss_anon_bytes > 0);

  assert.equal((await c.call('models.unload', { model: 'tiny' })).result.state, 'unloaded');
  const errors = [
    [await c.call('models.load', { model: 'nope' }), -32002, /model "nope" is not configured/],
    [await c.call('models.load', {}), -32602, /model: is required/],
    [await c.call('models.load', { model: 'tiny', keep_alive: 'later' }), -32602, /keep_alive: must be a duration/],
    [
      await c.call('chat', { model: 'tiny', messages: ASK, temperature: -1 }),
      -32602,
      /temperature: must be in \[0, 100\]/,
    ],
    [await c.call('chat', { model: 'tiny', messages: 'hi' }), -32602, /messages/],
    [await c.call('cancel', {}), -32602, /request_id: is required/],
  ] as const;
  for (const [reply, code, re] of errors) {
    assert.equal(reply.error?.code, code, JSON.stringify(reply));
    assert.match(reply.error!.message, re);
  }
  const invalid = errors[3][0].error!.data;
  assert.deepEqual([invalid.field, invalid.rule], ['temperature', 'range']);
});

test('keep_alive 0 unloads right after the request; a duration unloads once idle that long; negative keeps it', async (t) => {
  const c = await rpc(t);
  const r = await c.call('chat', { model: 'tiny', messages: ASK, max_tokens: 3, keep_alive: 0 }, 60_000);
  assert.equal(r.error, undefined);
  assert.equal(d.models.statusOf('tiny').state, 'unloaded');

  await c.call('chat', { model: 'brief', messages: ASK, max_tokens: 3 }, 60_000);
  const s = d.models.statusOf('brief');
  assert.equal(s.keep_alive, '300ms');
  assert.ok(s.unload_at !== null);
  await waitFor(
    () => (d.models.statusOf('brief').state === 'unloaded' ? true : undefined),
    'brief to unload after its keep-alive',
  );

  await c.call('chat', { model: 'brief', messages: ASK, max_tokens: 3, keep_alive: '-1' }, 60_000);
  assert.deepEqual(
    [d.models.statusOf('brief').state, d.models.statusOf('brief').unload_at, d.models.statusOf('brief').keep_alive],
    ['loaded', null, 'never'],
  );
  await c.call('models.unload', { model: 'brief' });
});

test('cancel mid-stream: the chat ends "cancelled" and the model is free at once', async (t) => {
  const c = await rpc(t);
  const chat = c.call(
    'chat',
    { model: 'tiny', messages: ASK, max_tokens: 1500, logit_bias: model.banStops, request_id: 'long' },
    60_000,
  );
  await c.nextNotification('chat.delta');
  const cancel = await c.call('cancel', { request_id: 'long' });
  assert.deepEqual(cancel.result, { request_id: 'long', cancelled: true });
  const r = (await chat).result;
  assert.equal(r.finish_reason, 'cancelled');
  assert.ok(r.usage.completion_tokens >= 1 && r.usage.completion_tokens < 1500, `${r.usage.completion_tokens} tokens`);
  assert.equal(
    r.message.content,
    c.notifications
      .filter((n) => n.method === 'chat.delta' && n.params.request_id === 'long')
      .map((n) => n.params.delta.content)
      .join(''),
  );
  const s = await idle('tiny');
  const held = r.usage.prompt_tokens + r.usage.completion_tokens;
  // The last sampled token is in the cache when the cancel landed during its decode.
  assert.ok(
    s.sessions.cached_tokens.some((n) => n === held - 1 || n === held),
    `sessions hold ${s.sessions.cached_tokens}, generated ${held}`,
  );
  assert.deepEqual(
    (await c.call('cancel', { request_id: 'long' })).result,
    { request_id: 'long', cancelled: false },
    'nothing left to cancel',
  );
});

test('busy over WebSocket, and a cancel of a request that is still waiting', async (t) => {
  const c = await rpc(t);
  const first = c.call(
    'chat',
    { model: 'solo', messages: ASK, max_tokens: 1500, logit_bias: model.banStops, request_id: 'a' },
    60_000,
  );
  await c.nextNotification('chat.delta');
  const busy = await c.call('chat', { model: 'solo', messages: ASK, max_tokens: 5 });
  assert.equal(busy.error?.code, -32001);
  assert.match(busy.error!.message, /model "solo" is busy: 0 requests already waiting \(queue_size 0\)/);
  assert.deepEqual([busy.error!.data.code, busy.error!.data.queue_size], ['busy', 0]);
  // "tiny" queues: a waiting request cancelled before its turn ends without output.
  const holder = c.call(
    'chat',
    { model: 'tiny', messages: ASK, max_tokens: 1500, logit_bias: model.banStops, request_id: 'holder' },
    60_000,
  );
  await waitFor(
    () => (c.notifications.some((n) => n.params?.request_id === 'holder') ? true : undefined),
    'holder to stream',
  );
  const queued = c.call('chat', { model: 'tiny', messages: ASK, max_tokens: 5, request_id: 'queued' }, 60_000);
  await waitFor(
    () => (d.models.statusOf('tiny').queue.waiting === 1 ? true : undefined),
    'the second tiny request to wait',
  );
  assert.deepEqual((await c.call('cancel', { request_id: 'queued' })).result.cancelled, true);
  const q = (await queued).result;
  assert.deepEqual([q.finish_reason, q.usage], ['cancelled', null]);
  assert.equal(d.models.statusOf('tiny').queue.waiting, 0);
  for (const id of ['a', 'holder']) await c.call('cancel', { request_id: id });
  assert.equal((await first).result.finish_reason, 'cancelled');
  assert.equal((await holder).result.finish_reason, 'cancelled');
  await idle('solo');
  await idle('tiny');
});

test('an HTTP client that disconnects mid-stream stops generation and frees the model', async () => {
  const decoded = async () => {
    const text = await (await fetch(`${d.http}/metrics`, { headers: auth })).text();
    return (
      parsePrometheus(text).samples.find((s) => s.name === 'brainstem_decode_tokens_total' && s.labels.model === 'solo')
        ?.value ?? 0
    );
  };
  const before = await decoded();
  const ac = new AbortController();
  const res = await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'solo', messages: ASK, stream: true, max_tokens: 1500, logit_bias: model.banStops }),
    signal: ac.signal,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^text\/event-stream/);
  const reader = res.body!.getReader();
  let seen = '';
  while (!seen.includes('"content"')) seen += new TextDecoder().decode((await reader.read()).value);
  ac.abort();
  const s = await idle('solo');
  const tokens = (await decoded()) - before;
  assert.ok(tokens >= 1 && tokens < 1500, `generated ${tokens} tokens before stopping`);
  assert.equal(Math.max(...s.sessions.cached_tokens) < 1500, true);
  // Nothing keeps running: the counter stays put and the model serves the next request.
  const next = await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: 'solo', messages: ASK, max_tokens: 2 }),
  });
  assert.equal(next.status, 200);
  assert.equal((await decoded()) - before, tokens + ((await next.json()) as any).usage.completion_tokens);
});

test('a WebSocket client that goes away mid-stream frees the model too', async () => {
  const c = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  c.ws.send(
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'chat',
      params: { model: 'solo', messages: ASK, max_tokens: 1500, logit_bias: model.banStops },
    }),
  );
  await c.nextNotification('chat.delta');
  c.ws.terminate();
  await idle('solo');
});

test('/health: the daemon stays ready while a model is unloaded; ?model= reports that model', async () => {
  await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: 'solo', messages: ASK, max_tokens: 2 }),
  });
  const health = await fetch(`${d.http}/health`, { headers: auth });
  assert.equal(health.status, 200);
  const models = ((await health.json()) as any).services.models.detail.models;
  assert.deepEqual(models.solo, { state: 'loaded', ready: true });
  assert.equal(models.brief.state, 'unloaded');
  const one = await fetch(`${d.http}/health?model=solo`, { headers: auth });
  assert.deepEqual(
    [one.status, await one.json()],
    [200, { status: 'ready', model: 'solo', state: 'loaded', ready: true }],
  );
  const other = await fetch(`${d.http}/health?model=brief`, { headers: auth });
  assert.deepEqual([other.status, ((await other.json()) as any).ready], [503, false]);
  const unknown = await fetch(`${d.http}/health?model=nope`, { headers: auth });
  assert.equal(unknown.status, 404);
  assert.equal(((await unknown.json()) as any).error.code, 'model_not_found');
});

test('/metrics: loaded models, queue depth, token counters, time to first token and speeds', async () => {
  await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: 'solo', messages: ASK, max_tokens: 4 }),
  });
  const { samples, types } = parsePrometheus(await (await fetch(`${d.http}/metrics`, { headers: auth })).text());
  const get = (name: string, labels: Record<string, string> = { model: 'solo' }) =>
    samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
  assert.equal(get('brainstem_model_loaded'), 1);
  assert.equal(get('brainstem_model_loaded', { model: 'brief' }), 0);
  assert.equal(get('brainstem_model_queue_depth'), 0);
  assert.equal(get('brainstem_model_active_requests'), 0);
  assert.ok(get('brainstem_prefill_tokens_total')! > 0);
  assert.ok(get('brainstem_decode_tokens_total')! > 0);
  assert.ok(get('brainstem_prompt_cached_tokens_total')! > 0);
  assert.ok(get('brainstem_time_to_first_token_seconds_count')! >= 1);
  assert.ok(get('brainstem_decode_tokens_per_second')! > 0);
  assert.ok(get('brainstem_prefill_tokens_per_second')! > 0);
  assert.ok(get('brainstem_model_load_seconds_count')! >= 1);
  assert.ok(get('brainstem_chat_requests_total', { model: 'solo', outcome: 'cancelled' })! >= 1);
  assert.equal(types.get('brainstem_time_to_first_token_seconds'), 'histogram');
  assert.equal(types.get('brainstem_decode_tokens_total'), 'counter');
});

test('/metrics: expert streaming counters of a staged + prerouter model, anonymous and file-backed memory', async () => {
  const own = await startTestDaemon({
    models: {
      streamed: { path: model.path, threads: 1, context_length: 2048, decode_path: 'staged', prerouter: 'on' },
    },
  });
  try {
    const res = await fetch(`${own.http}/v1/chat/completions`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'streamed', messages: ASK, max_tokens: 6, logit_bias: model.banStops }),
    });
    assert.equal(res.status, 200);
    const { samples, types } = parsePrometheus(await (await fetch(`${own.http}/metrics`, { headers: auth })).text());
    const get = (name: string, labels: Record<string, string> = { model: 'streamed' }) =>
      samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    // Staged decode loads the routed experts into slots; the prerouter routes every MoE layer but the first.
    assert.ok(get('brainstem_expert_read_bytes_total')! > 0);
    assert.ok(get('brainstem_expert_loads_total')! > 0);
    assert.ok(get('brainstem_expert_prefetch_loads_total')! > 0);
    assert.ok(get('brainstem_prerouter_predicted_layers_total')! > 0);
    assert.ok(get('brainstem_expert_buffer_bytes')! > 0);
    assert.equal(get('brainstem_expert_drops_total') ?? 0, 0);
    assert.equal(get('brainstem_expert_prefetch_misses_total') ?? 0, 0);
    assert.equal(types.get('brainstem_expert_blocked_seconds_total'), 'counter');
    if (process.platform === 'linux') {
      assert.ok(get('brainstem_process_rss_anon_bytes', {})! > 0);
      assert.ok(get('brainstem_process_rss_file_bytes', {})! > 0);
    }
  } finally {
    await own.stop();
  }
});

test('stopping the daemon mid-stream ends generation promptly with an error, not a short answer', async () => {
  const profile = { path: model.path, threads: 1, context_length: 2048 };
  const own = await startTestDaemon({ models: { tiny: profile, other: profile } });
  const c = await RpcTestClient.connect(own.ws, TEST_TOKEN);
  const long = { messages: ASK, max_tokens: 2000, logit_bias: model.banStops };
  const chat = c.call('chat', { model: 'tiny', ...long }, 60_000);
  const queued = c.call('chat', { model: 'tiny', ...long }, 60_000);
  const res = await fetch(`${own.http}/v1/chat/completions`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model: 'other', stream: true, ...long }),
  });
  assert.equal(res.status, 200);
  await c.nextNotification('chat.delta');
  const text = res.text();
  await own.stop();
  for (const reply of [await chat, await queued]) {
    assert.equal(reply.error?.code, -32003, JSON.stringify(reply).slice(0, 300));
    assert.match(reply.error!.message, /the daemon is stopping/);
  }
  const events = (await text).split('\n\n').filter((e) => e.startsWith('data: '));
  assert.equal(events.at(-1), 'data: [DONE]');
  assert.match(events.at(-2)!, /"code":"unavailable"/);
  await c.close();
});
