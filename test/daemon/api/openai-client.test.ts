// The official `openai` npm client against a running daemon serving a tiny synthetic model
// (random weights, the real engine): chat with and without streaming, constrained tool calls and
// JSON, the models list, and every error in OpenAI's shape and status.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { parseSchema } from '../../../daemon/engine/json-schema/schema.js';
import { validateJson } from '../../../daemon/engine/json-schema/validate.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { synthTiny, type TinyModel, WEATHER_TOOLS } from '../../helpers/serving.js';
import { waitFor } from '../../helpers/wait.js';

let model: TinyModel;
let d: TestDaemon;
let client: OpenAI;
const ASK = [{ role: 'user' as const, content: 'What is the weather in Paris?' }];

before(async () => {
  model = await synthTiny(3);
  const profile = { path: model.path, threads: 1, context_length: 4096 };
  d = await startTestDaemon({
    models: {
      tiny: { ...profile, keep_alive: -1 },
      narrow: { ...profile, queue_size: 0 },
      gone: { path: `${model.path}-missing` },
    },
  });
  client = new OpenAI({ baseURL: `${d.http}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 });
});

after(async () => {
  await d?.stop();
  model?.remove();
});

const schemaOf = (name: string) =>
  parseSchema(WEATHER_TOOLS.find((t) => t.function.name === name)!.function.parameters);

test('non-streaming chat: content, finish reason, usage and timings; the same seed gives the same text', async () => {
  const body = { model: 'tiny', messages: ASK, max_tokens: 24, seed: 7, temperature: 0.8 };
  const r = await client.chat.completions.create(body);
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.model, 'tiny');
  assert.match(r.id, /^chatcmpl-/);
  const choice = r.choices[0]!;
  assert.equal(choice.message.role, 'assistant');
  assert.equal(typeof choice.message.content, 'string');
  assert.ok(['stop', 'length'].includes(choice.finish_reason), choice.finish_reason);
  const u = r.usage!;
  assert.ok(u.prompt_tokens > 10 && u.completion_tokens >= 1 && u.completion_tokens <= 24, JSON.stringify(u));
  assert.equal(u.total_tokens, u.prompt_tokens + u.completion_tokens);
  const t = (r as any).timings;
  assert.equal(t.prefill_tokens + u.prompt_tokens_details!.cached_tokens!, u.prompt_tokens);
  for (const k of [
    'prefill_ms',
    'prefill_tokens_per_second',
    'decode_ms',
    'decode_tokens_per_second',
    'time_to_first_token_ms',
    'queue_ms',
    'load_ms',
    'total_ms',
  ]) {
    assert.ok(typeof t[k] === 'number' && t[k] >= 0, `timings.${k} = ${t[k]}`);
  }
  assert.ok(t.time_to_first_token_ms <= t.total_ms);
  const again = await client.chat.completions.create(body);
  assert.equal(again.choices[0]!.message.content, choice.message.content);
  assert.ok(again.usage!.prompt_tokens_details!.cached_tokens! > 0, 'the repeated prompt came from the session cache');
});

test('streaming chat: deltas add up to the non-streamed text, then a finish chunk and a usage chunk', async () => {
  const body = {
    model: 'tiny',
    messages: [{ role: 'user' as const, content: 'Count to five.' }],
    max_tokens: 20,
    seed: 11,
    temperature: 0.7,
  };
  const whole = await client.chat.completions.create(body);
  const stream = await client.chat.completions.create({
    ...body,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  const finishes: string[] = [];
  let usage: OpenAI.CompletionUsage | undefined;
  let usages = 0;
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) {
      usage = chunk.usage;
      usages++;
    }
    for (const c of chunk.choices) {
      text += c.delta.content ?? '';
      if (c.finish_reason) finishes.push(c.finish_reason);
    }
  }
  assert.equal(text, whole.choices[0]!.message.content);
  assert.deepEqual(finishes, [whole.choices[0]!.finish_reason]);
  assert.equal(usage?.completion_tokens, whole.usage!.completion_tokens);
  assert.equal(usages, 1, 'with include_usage, usage comes on one chunk only');
  assert.ok(chunks >= 3, `${chunks} chunks`);
});

test('reasoning: what follows an opening <think> comes as reasoning_content, in the message and in stream deltas', async () => {
  // <think> forced as every token: the output opens its reasoning and never closes it.
  const body = {
    model: 'tiny',
    messages: ASK,
    logit_bias: { [String(model.thinkToken)]: 100 },
    max_tokens: 4,
  };
  const whole = await client.chat.completions.create(body);
  const message = whole.choices[0]!.message as { content: string | null; reasoning_content?: string };
  assert.deepEqual([message.content, message.reasoning_content], ['', '<think>'.repeat(3)]);
  let streamed = '';
  for await (const chunk of await client.chat.completions.create({ ...body, stream: true })) {
    const delta = chunk.choices[0]?.delta as { content?: string; reasoning_content?: string } | undefined;
    assert.ok(!delta?.content, 'no content in this stream');
    streamed += delta?.reasoning_content ?? '';
  }
  assert.equal(streamed, '<think>'.repeat(3));
  const raw = await client.chat.completions.create({ ...body, reasoning_format: 'none' } as never);
  assert.equal(raw.choices[0]!.message.content, '<think>'.repeat(4));
});

test('tool_choice "required": the random-weight model always calls a given tool with valid arguments', async () => {
  for (let seed = 1; seed <= 4; seed++) {
    const r = await client.chat.completions.create({
      model: 'tiny',
      messages: ASK,
      tools: WEATHER_TOOLS,
      tool_choice: 'required',
      seed,
      temperature: 1,
      max_tokens: 120,
    });
    const choice = r.choices[0]!;
    assert.equal(choice.finish_reason, 'tool_calls', `seed ${seed}`);
    assert.equal(choice.message.content, null);
    const calls = choice.message.tool_calls!;
    assert.equal(calls.length, 1);
    const call = calls[0]! as OpenAI.ChatCompletionMessageFunctionToolCall;
    assert.match(call.id, /^call_/);
    assert.deepEqual(
      validateJson(JSON.parse(call.function.arguments), schemaOf(call.function.name)),
      [],
      `seed ${seed}: ${call.function.arguments}`,
    );
  }
});

test('a named tool_choice, streamed: one tool_calls delta with the whole call', async () => {
  const stream = await client.chat.completions.create({
    model: 'tiny',
    messages: ASK,
    tools: WEATHER_TOOLS,
    tool_choice: { type: 'function', function: { name: 'set_gripper' } },
    seed: 5,
    temperature: 1,
    max_tokens: 120,
    stream: true,
  });
  const deltas: OpenAI.ChatCompletionChunk.Choice.Delta.ToolCall[] = [];
  let finish: string | null = null;
  for await (const chunk of stream) {
    for (const c of chunk.choices) {
      deltas.push(...(c.delta.tool_calls ?? []));
      finish = c.finish_reason ?? finish;
    }
  }
  assert.equal(finish, 'tool_calls');
  assert.equal(deltas.length, 1);
  assert.equal(deltas[0]!.index, 0);
  assert.equal(deltas[0]!.function!.name, 'set_gripper');
  assert.deepEqual(validateJson(JSON.parse(deltas[0]!.function!.arguments!), schemaOf('set_gripper')), []);
});

test('response_format json_schema: the content is JSON valid against the schema', async () => {
  const schema = {
    type: 'object',
    properties: { answer: { type: 'string', maxLength: 8 }, score: { type: 'integer', minimum: 0, maximum: 9 } },
    required: ['answer', 'score'],
    additionalProperties: false,
  };
  const r = await client.chat.completions.create({
    model: 'tiny',
    messages: ASK,
    response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
    seed: 2,
    temperature: 1,
    max_tokens: 80,
  });
  assert.equal(r.choices[0]!.finish_reason, 'stop');
  assert.deepEqual(validateJson(JSON.parse(r.choices[0]!.message.content!), parseSchema(schema)), []);
});

test('models: list and retrieve', async () => {
  const list = await client.models.list();
  assert.deepEqual(
    list.data.map((m) => m.id),
    ['tiny', 'narrow', 'gone'],
  );
  assert.ok(list.data.every((m) => m.object === 'model' && m.owned_by === 'brainstem'));
  assert.ok(list.data[0]!.created > 0, "created = the folder's mtime");
  const m = await client.models.retrieve('tiny');
  assert.equal((m as any).state, 'loaded');
  await assert.rejects(
    client.models.retrieve('nope'),
    (e: unknown) => e instanceof OpenAI.NotFoundError && (e.error as any).code === 'model_not_found',
  );
});

test('errors: 400 naming the field, 401, 404 model_not_found, 429 busy, 500 for a malformed model output', async () => {
  const bad = async (
    body: Record<string, unknown>,
    cls: abstract new (...args: any[]) => Error,
    check: (e: any) => void,
  ) => {
    await assert.rejects(client.chat.completions.create({ model: 'tiny', messages: ASK, ...body } as any), (e: any) => {
      assert.ok(e instanceof cls, `${JSON.stringify(body)}: ${e}`);
      check(e);
      return true;
    });
  };
  await bad({ temperature: 'hot' }, OpenAI.BadRequestError, (e) => {
    assert.equal(e.status, 400);
    assert.equal(e.type, 'invalid_request_error');
    assert.equal(e.param, 'temperature');
    assert.match(e.message, /temperature: must be a number, got "hot"/);
  });
  await bad({ messages: [{ role: 'robot', content: 'x' }] }, OpenAI.BadRequestError, (e) =>
    assert.match(e.param, /^messages\[0\]/),
  );
  await bad({ tools: WEATHER_TOOLS, tool_choice: 'required', max_tokens: 3 }, OpenAI.BadRequestError, (e) =>
    assert.match(e.message, /max_tokens: the constrained output needs at least \d+ tokens, got 3/),
  );
  await bad({ keep_alive: 'soon' }, OpenAI.BadRequestError, (e) => assert.equal(e.param, 'keep_alive'));
  // A prompt longer than the context: OpenAI's code, so wrappers that look for it trim and retry.
  await bad({ messages: [{ role: 'user', content: 'word '.repeat(5000) }] }, OpenAI.BadRequestError, (e) => {
    assert.deepEqual([e.param, e.code], ['messages', 'context_length_exceeded']);
    assert.match(e.message, /the prompt has \d+ tokens; the context holds 4096/);
  });
  // Every bad field carries its invalid_<rule> code, the stream flags too.
  await bad({ temperature: 'hot' }, OpenAI.BadRequestError, (e) => assert.equal(e.code, 'invalid_type'));
  await bad({ stream: 'yes' }, OpenAI.BadRequestError, (e) => {
    assert.deepEqual([e.param, e.code], ['stream', 'invalid_type']);
  });
  await bad({ stream: true, stream_options: { include_usage: 'y' } }, OpenAI.BadRequestError, (e) => {
    assert.deepEqual([e.param, e.code], ['stream_options', 'invalid_type']);
  });
  await bad({ max_completion_tokens: 'x' }, OpenAI.BadRequestError, (e) => {
    assert.deepEqual([e.param, e.code], ['max_completion_tokens', 'invalid_type']);
  });
  await bad({ model: 'tiny:my-adapter' }, OpenAI.BadRequestError, (e) => {
    assert.equal(e.param, 'model');
    assert.match(e.message, /adapter "my-adapter" is not loaded for model "tiny" \(loaded: none\)/);
  });
  await bad({ model: 'gpt-4o' }, OpenAI.NotFoundError, (e) => {
    assert.equal(e.code, 'model_not_found');
    assert.match(e.message, /model "gpt-4o" is not configured \(configured: tiny, narrow, gone\)/);
  });
  await bad({ model: 'gone' }, OpenAI.InternalServerError, (e) => {
    assert.equal(e.code, 'model_load_failed');
    assert.match(e.message, /model "gone" \(.*-missing\) failed to load: folder .*-missing does not exist/);
  });
  const health = await fetch(`${d.http}/health?model=gone`, {
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
  });
  assert.deepEqual([health.status, ((await health.json()) as any).state], [503, 'failed']);
  assert.equal((await fetch(`${d.http}/health`)).status, 200, 'one broken model does not make the daemon unready');
  const stranger = new OpenAI({ baseURL: `${d.http}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await assert.rejects(
    stranger.chat.completions.create({ model: 'tiny', messages: ASK }),
    (e: unknown) => e instanceof OpenAI.AuthenticationError && e.status === 401,
  );

  // "narrow" has queue_size 0: while one request runs, the next is refused at once.
  const running = await client.chat.completions.create({
    model: 'narrow',
    messages: ASK,
    stream: true,
    max_tokens: 4000,
    logit_bias: model.banStops,
    seed: 1,
  });
  const it = running[Symbol.asyncIterator]();
  await it.next();
  await bad({ model: 'narrow' }, OpenAI.RateLimitError, (e) => {
    assert.equal(e.status, 429);
    assert.equal(e.code, 'busy');
    assert.match(e.message, /model "narrow" is busy: 0 requests already waiting \(queue_size 0\); retry later/);
    assert.equal(e.headers.get('retry-after'), '1');
  });
  // A malformed body is refused before it queues: a 400 naming the field, not a 429 to retry.
  await bad({ model: 'narrow', n: 2 }, OpenAI.BadRequestError, (e) => assert.equal(e.param, 'n'));
  await bad({ model: 'narrow', messages: [] }, OpenAI.BadRequestError, (e) => assert.equal(e.param, 'messages'));
  await bad({ model: 'narrow', temperature: 'hot' }, OpenAI.BadRequestError, (e) =>
    assert.equal(e.param, 'temperature'),
  );
  await bad({ model: 'narrow', logprobs: true }, OpenAI.BadRequestError, (e) => {
    assert.deepEqual([e.param, e.code], ['logprobs', 'invalid_unsupported']);
  });
  running.controller.abort();
  await waitFor(
    () => (d.models.statusOf('narrow').queue.active === 0 ? true : undefined),
    'the aborted stream to free the model',
  );

  // </tool_call> forced as every token: a closing tag with no call is malformed output, an error.
  const endId = String(model.toolCallEndToken);
  await bad({ tools: WEATHER_TOOLS, logit_bias: { [endId]: 100 }, max_tokens: 20 }, OpenAI.InternalServerError, (e) => {
    assert.equal(e.status, 500);
    assert.equal(e.type, 'model_output_error');
    assert.equal(e.code, 'unexpected_tag');
    assert.match(e.error.raw, /^<\/tool_call>/);
    assert.equal(e.headers.get('x-should-retry'), 'false');
  });
  // <tool_call> forced as every token until max_tokens: cut inside a call, the text is the reply
  // and finish_reason "length" (as OpenAI), so the client can retry with a larger budget.
  const toolCallId = String(model.toolCallToken);
  const cut = await client.chat.completions.create({
    model: 'tiny',
    messages: ASK,
    tools: WEATHER_TOOLS,
    logit_bias: { [toolCallId]: 100 },
    max_tokens: 5,
  });
  assert.equal(cut.choices[0]!.finish_reason, 'length');
  assert.equal(cut.choices[0]!.message.content, '<tool_call>'.repeat(5));
  assert.equal(cut.choices[0]!.message.tool_calls, undefined);
  const s = await client.chat.completions.create({
    model: 'tiny',
    messages: ASK,
    tools: WEATHER_TOOLS,
    logit_bias: { [endId]: 100 },
    max_tokens: 20,
    stream: true,
  });
  await assert.rejects(
    async () => {
      for await (const _ of s);
    },
    (e: unknown) => e instanceof OpenAI.APIError && (e.error as any).type === 'model_output_error',
  );
});
