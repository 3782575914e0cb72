import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChatEvent, type ChatResult, runChat } from '../../../daemon/engine/chat.js';
import { type ChatRequest, parseChatRequest } from '../../../daemon/engine/chat-request.js';
import { ConstraintFactory } from '../../../daemon/engine/constrained/constraints.js';
import { validateJson } from '../../../daemon/engine/json-schema/validate.js';
import { PrefixSession, type LogitsSource } from '../../../daemon/engine/prefix-cache.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { loadTextModel } from '../../../daemon/engine/text-config.js';
import { FIXTURE, RandomLogitsSource, ScriptedLogitsSource } from './fake-sources.js';

const model = await loadTextModel(FIXTURE);
const constraints = new ConstraintFactory(model.tokenizer, model.stopTokens);
const V = model.tokenizer.vocabSize;
const IM_END = 292;

const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 16 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function',
    function: {
      name: 'set_gripper',
      parameters: {
        type: 'object',
        properties: { gripper: { type: 'number', minimum: 0, maximum: 1 } },
        required: ['gripper'],
      },
    },
  },
];
const ASK = [{ role: 'user', content: 'Weather in Paris?' }];

async function chat(
  source: LogitsSource | PrefixSession,
  body: Record<string, unknown>,
  signal?: AbortSignal,
  onEvent?: (e: ChatEvent) => void,
): Promise<{ events: ChatEvent[]; result: ChatResult; req: ChatRequest }> {
  const session = source instanceof PrefixSession ? source : new PrefixSession(source);
  const req = parseChatRequest({ temperature: 0, ...body }, model);
  const gen = runChat(model, session, req, { constraints, signal });
  const events: ChatEvent[] = [];
  for (;;) {
    const step = await gen.next();
    if (step.done) return { events, result: step.value, req };
    events.push(step.value);
    onEvent?.(step.value);
  }
}

const script = (text: string, end = true): number[] => [...model.tokenizer.encode(text), ...(end ? [IM_END] : [])];

test('request parsing: model defaults under request values; bad fields are named', () => {
  const req = parseChatRequest({ messages: ASK, top_p: 0.5, max_tokens: 9, stop: 'END' }, model);
  assert.equal(req.sampling.temperature, 0.6, 'generation_config.json default');
  assert.equal(req.sampling.topK, 20);
  assert.equal(req.sampling.topP, 0.5);
  assert.equal(req.maxTokens, 9);
  assert.deepEqual(req.stop, ['END']);
  assert.deepEqual(req.toolChoice, { kind: 'none' });
  const bad: Array<[Record<string, unknown>, RegExp]> = [
    [{ messages: ASK, n: 2 }, /^n: only n = 1 is supported/],
    [{ messages: ASK, stop: [''] }, /^stop: must be a non-empty string of at most 1024 characters or an array/],
    [
      { messages: ASK, tools: TOOLS, tool_choice: { type: 'function', function: { name: 'fly' } } },
      /^tool_choice\.function\.name: no tool named "fly" in tools \(get_weather, set_gripper\)/,
    ],
    [{ messages: ASK, tool_choice: 'required' }, /^tool_choice: "required" needs at least one tool/],
    [
      { messages: ASK, tools: [{ type: 'function', function: { name: 'bad name' } }] },
      /^tools\[0\]\.function\.name: must be 1-64 letters/,
    ],
    [
      {
        messages: ASK,
        tools: [
          {
            type: 'function',
            function: { name: 'f', parameters: { type: 'object', properties: { a: { type: 'str' } } } },
          },
        ],
      },
      /^tools\[0\]\.function\.parameters\.properties\.a\.type: must name JSON types \(.*\), got "str"/,
    ],
    [
      { messages: ASK, response_format: { type: 'xml' } },
      /^response_format\.type: must be "text", "json_object" or "json_schema"/,
    ],
    [
      { messages: ASK, tools: TOOLS, tool_choice: 'required', response_format: { type: 'json_object' } },
      /^response_format: a JSON response format cannot be combined/,
    ],
    [{ messages: ASK, max_tokens: 0 }, /^max_tokens: must be in \[1, /],
    [{ messages: ASK, logprobs: true }, /^logprobs: log probabilities are not returned by this server/],
    [{ messages: ASK, top_logprobs: 2 }, /^top_logprobs: log probabilities are not returned/],
    [{ messages: ASK, functions: [] }, /^functions: the legacy functions API is not supported: send `tools` instead/],
    [{ messages: ASK, function_call: 'auto' }, /^function_call: the legacy functions API is not supported/],
    [{ messages: ASK, parallel_tool_calls: 'no' }, /^parallel_tool_calls: must be true or false, got "no"/],
    [
      {
        messages: [
          ...ASK,
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{"a": {"__proto__": 1}}' } }],
          },
        ],
      },
      /^messages\[1\]\.tool_calls\[0\]\.function\.arguments\.a\.__proto__: is a reserved key/,
    ],
    [{ messages: ASK, max_completion_tokens: 'x', max_tokens: 5 }, /^max_completion_tokens: must be a number, got "x"/],
    [{ messages: ASK, stop: ['ok', 'x'.repeat(1025)] }, /^stop: must be a non-empty string of at most 1024 characters/],
    [
      { messages: ASK, response_format: { type: 'json_schema' } },
      /^response_format\.json_schema: type "json_schema" needs a "json_schema" object with the "schema", got nothing/,
    ],
  ];
  for (const [body, re] of bad)
    assert.throws(
      () => parseChatRequest(body, model),
      (e: unknown) => e instanceof RequestError && re.test(e.message),
      JSON.stringify(body),
    );
});

test('plain content streams and finishes with "stop"', async () => {
  const { events, result } = await chat(new ScriptedLogitsSource(V, script('Hi there')), { messages: ASK });
  assert.deepEqual(events.map((e) => (e.type === 'content' ? e.text : '?')).join(''), 'Hi there');
  assert.deepEqual(
    { content: result.content, finish: result.finishReason, calls: result.toolCalls },
    { content: 'Hi there', finish: 'stop', calls: [] },
  );
  assert.equal(result.usage.completionTokens, script('Hi there').length);
});

test('a tool call in the output becomes a tool_call event and finish reason "tool_calls"', async () => {
  const call =
    'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>';
  const { events, result } = await chat(new ScriptedLogitsSource(V, script(call)), { messages: ASK, tools: TOOLS });
  assert.deepEqual(
    events.filter((e) => e.type === 'tool_call'),
    [
      {
        type: 'tool_call',
        index: 0,
        call: { name: 'get_weather', arguments: { city: 'Paris', days: 2 }, format: 'hermes' },
      },
    ],
  );
  assert.equal(result.content, 'Checking.');
  assert.equal(result.finishReason, 'tool_calls');
});

test('a thinking model: <think>…</think> is reasoning, a call inside it is not run; reasoning_format none keeps it in the content', async () => {
  const out =
    '<think>\nMaybe <tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 1}}\n</tool_call> first? No.\n</think>\n\nChecking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
  const { events, result } = await chat(new ScriptedLogitsSource(V, script(out)), { messages: ASK, tools: TOOLS });
  assert.equal(
    result.reasoning,
    'Maybe <tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 1}}\n</tool_call> first? No.',
  );
  assert.equal(
    events
      .filter((e) => e.type === 'reasoning')
      .map((e) => (e as { text: string }).text)
      .join(''),
    result.reasoning,
  );
  assert.equal(result.content, 'Checking.');
  assert.deepEqual(
    result.toolCalls.map((c) => c.name),
    ['get_weather'],
  );
  assert.equal(result.finishReason, 'tool_calls');
  const raw = await chat(new ScriptedLogitsSource(V, script(out)), {
    messages: ASK,
    tools: TOOLS,
    reasoning_format: 'none',
  });
  assert.equal(raw.result.reasoning, '');
  assert.deepEqual(
    raw.result.toolCalls.map((c) => c.name),
    ['set_gripper', 'get_weather'],
    'without the split, the thought-of call is parsed too (the old behaviour, on request)',
  );
});

test('parallel_tool_calls false: generation ends after the first call, finish reason "tool_calls"', async () => {
  const two =
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>';
  const both = await chat(new ScriptedLogitsSource(V, script(two)), { messages: ASK, tools: TOOLS });
  assert.deepEqual([both.result.toolCalls.length, both.result.content], [2, '']);
  const one = await chat(new ScriptedLogitsSource(V, script(two)), {
    messages: ASK,
    tools: TOOLS,
    parallel_tool_calls: false,
  });
  assert.deepEqual(
    one.result.toolCalls.map((c) => c.arguments),
    [{ city: 'Paris' }],
  );
  assert.equal(one.result.finishReason, 'tool_calls');
  assert.ok(one.result.usage.completionTokens < script(two).length, 'stopped after the first call');
});

test('a call cut by max_tokens or a stop string is returned as text with "length" / "stop"; one the model ended is an error', async () => {
  const partial = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}';
  const whole = `${partial}\n</tool_call>`;
  const long = await chat(new ScriptedLogitsSource(V, script(whole)), {
    messages: ASK,
    tools: TOOLS,
    max_tokens: script(partial).length,
  });
  assert.deepEqual([long.result.finishReason, long.result.toolCalls, long.result.error], ['length', [], undefined]);
  assert.ok(
    long.result.content.startsWith(partial) && whole.startsWith(long.result.content),
    JSON.stringify(long.result.content),
  );
  const stopped = await chat(new ScriptedLogitsSource(V, script(whole)), {
    messages: ASK,
    tools: TOOLS,
    stop: ['"Paris"'],
  });
  assert.deepEqual(
    [stopped.result.finishReason, stopped.result.content, stopped.result.error],
    ['stop', '<tool_call>\n{"name": "get_weather", "arguments": {"city": ', undefined],
  );
});

test('a malformed call ends generation at once with a typed error, not text', async () => {
  const bad =
    '<tool_call>\n{"name": "fly", "arguments": {}}\n</tool_call> and then a lot more text that is never generated';
  const source = new ScriptedLogitsSource(V, script(bad));
  const { result } = await chat(source, { messages: ASK, tools: TOOLS });
  assert.equal(result.finishReason, 'error');
  assert.equal(result.error?.code, 'unknown_tool');
  assert.equal(result.toolCalls.length, 0);
  assert.ok(
    result.usage.completionTokens < script(bad).length / 2,
    `stopped early: ${result.usage.completionTokens} tokens`,
  );
  const unclosed = await chat(
    new ScriptedLogitsSource(V, script('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}')),
    { messages: ASK, tools: TOOLS },
  );
  assert.equal(unclosed.result.error?.code, 'unclosed_tag');
  const none = await chat(new ScriptedLogitsSource(V, script('<tool_call>x</tool_call>')), {
    messages: ASK,
    tools: TOOLS,
    tool_choice: 'none',
  });
  assert.equal(none.result.content, '<tool_call>x</tool_call>', 'tool_choice "none": calls are not parsed');
});

test('tool_choice "required" with a random-weight model: 30 seeded requests, each one valid call', async () => {
  for (let seed = 1; seed <= 30; seed++) {
    const { result } = await chat(new RandomLogitsSource(V, seed), {
      messages: ASK,
      tools: TOOLS,
      tool_choice: 'required',
      temperature: 1,
      seed,
      max_tokens: 400,
    });
    const label = `seed ${seed}: ${JSON.stringify(result.content)} ${result.error?.message ?? ''}`;
    assert.equal(result.finishReason, 'tool_calls', label);
    assert.equal(result.toolCalls.length, 1, label);
    assert.equal(result.content, '', label);
  }
  const named = await chat(new RandomLogitsSource(V, 99), {
    messages: ASK,
    tools: TOOLS,
    tool_choice: { type: 'function', function: { name: 'set_gripper' } },
    temperature: 1,
    seed: 3,
    max_tokens: 200,
  });
  assert.equal(named.result.toolCalls[0]?.name, 'set_gripper');
});

test('response_format json_schema with random logits yields valid JSON content', async () => {
  const schema = {
    type: 'object',
    properties: { answer: { type: 'string', maxLength: 10 }, score: { type: 'integer', minimum: 0, maximum: 10 } },
    required: ['answer', 'score'],
    additionalProperties: false,
  };
  for (let seed = 1; seed <= 10; seed++) {
    const { result, req } = await chat(new RandomLogitsSource(V, seed), {
      messages: ASK,
      response_format: { type: 'json_schema', json_schema: { name: 'a', schema } },
      temperature: 1,
      seed,
      max_tokens: 200,
    });
    assert.equal(result.finishReason, 'stop', `seed ${seed}: ${result.content}`);
    assert.equal(req.responseFormat.kind, 'json');
    if (req.responseFormat.kind === 'json')
      assert.deepEqual(validateJson(JSON.parse(result.content), req.responseFormat.schema), []);
  }
});

test('agent loop: the next turn reuses the cached prompt and the generated call', async () => {
  const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
  const source = new ScriptedLogitsSource(V, script(call));
  const session = new PrefixSession(source);
  const first = await chat(session, { messages: ASK, tools: TOOLS });
  assert.equal(first.result.finishReason, 'tool_calls');
  const turn2 = [
    ...ASK,
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: JSON.stringify({ city: 'Paris' }) } },
      ],
    },
    { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
  ];
  const before = source.calls.prefilledTokens;
  const second = await chat(session, { messages: turn2, tools: TOOLS });
  const prompt1 = first.result.usage.promptTokens;
  assert.equal(
    second.result.usage.cachedTokens,
    prompt1 + script(call).length - 1,
    'everything but the undecoded <|im_end|>',
  );
  assert.equal(
    source.calls.prefilledTokens - before,
    second.result.usage.promptTokens - second.result.usage.cachedTokens,
  );
});

test('cancelling mid-stream returns "cancelled" and stops the engine calls', async () => {
  const ac = new AbortController();
  const source = new ScriptedLogitsSource(V, script('one two three four five six seven eight nine ten'));
  let seen = 0;
  const { result } = await chat(source, { messages: ASK }, ac.signal, () => {
    if (++seen === 2) ac.abort();
  });
  assert.equal(result.finishReason, 'cancelled');
  assert.equal(source.calls.decode, result.usage.completionTokens - 1);
  assert.ok(result.usage.completionTokens < script('one two three four five six seven eight nine ten').length);
});

test('a consumer that stops iterating (client gone) ends generation with a consistent cache', async () => {
  const text = 'one two three four five six seven eight nine ten';
  const source = new ScriptedLogitsSource(V, script(text));
  const session = new PrefixSession(source);
  let events = 0;
  for await (const _ of runChat(model, session, parseChatRequest({ messages: ASK, temperature: 0 }, model), {
    constraints,
  })) {
    if (++events === 2) break;
  }
  const decodes = source.calls.decode;
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(source.calls.decode, decodes, 'no engine call after the consumer left');
  assert.ok(decodes < script(text).length - 1);
  assert.equal(source.length, session.tokens.length);
});

test('a prompt longer than the context is a request error', async () => {
  const session = new PrefixSession(new ScriptedLogitsSource(V, []));
  const req = parseChatRequest({ messages: ASK }, model);
  await assert.rejects(
    runChat(model, session, req, { constraints, contextLength: 5 }).next(),
    (e: unknown) => e instanceof RequestError && /the prompt has \d+ tokens; the context holds 5/.test(e.message),
  );
});
