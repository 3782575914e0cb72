import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile, copyFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChatTemplate, normalizeMessages } from '../../../daemon/engine/chat-template.js';
import { loadTextModel } from '../../../daemon/engine/text-config.js';
import { RequestError } from '../../../daemon/engine/request-error.js';
import { parseTools } from '../../../daemon/engine/tool-calls/tools.js';
import { FIXTURE } from './fake-sources.js';

const WEATHER = parseTools([
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
]);

test('loads stop tokens from every config (eos_token_id list, config.json, eos_token) and sampling defaults', async () => {
  const m = await loadTextModel(FIXTURE);
  assert.deepEqual([...m.stopTokens].sort(), [290, 292]);
  assert.deepEqual(m.samplingDefaults, { temperature: 0.6, topK: 20, topP: 0.95 });
  assert.equal(m.maxContext, 4096);
});

test('renders tools, an assistant tool call, a tool result and the generation prompt (Qwen3 layout)', async () => {
  const m = await loadTextModel(FIXTURE);
  const messages = normalizeMessages([
    { role: 'system', content: 'You are terse.' },
    { role: 'user', content: 'Weather in Paris?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city": "Paris"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '{"temp": 21}' },
  ]);
  const text = m.template.render({ messages, tools: WEATHER.map((t) => t.openai) });
  const expected = [
    '<|im_start|>system',
    'You are terse.',
    '',
    '# Tools',
    '',
    'You may call one or more functions to assist with the user query.',
    '',
    'You are provided with function signatures within <tools></tools> XML tags:',
    '<tools>',
    '{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}',
    '</tools>',
    '',
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:',
    '<tool_call>',
    '{"name": <function-name>, "arguments": <args-json-object>}',
    '</tool_call><|im_end|>',
    '<|im_start|>user',
    'Weather in Paris?<|im_end|>',
    '<|im_start|>assistant',
    '<tool_call>',
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '</tool_call><|im_end|>',
    '<|im_start|>user',
    '<tool_response>',
    '{"temp": 21}',
    '</tool_response><|im_end|>',
    '<|im_start|>assistant',
    '',
  ].join('\n');
  assert.equal(text, expected);
  // The special-token strings tokenize to their ids.
  const ids = m.tokenizer.encode(text);
  assert.equal(ids.filter((id) => id === 291).length, 5);
  assert.equal(ids.filter((id) => id === 293).length, 3, 'two in the instructions, one in the call');
});

test('without tools and without the generation prompt', async () => {
  const m = await loadTextModel(FIXTURE);
  const text = m.template.render({
    messages: normalizeMessages([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
    ]),
    addGenerationPrompt: false,
  });
  assert.equal(text, '<|im_start|>user\na\nb<|im_end|>\n');
});

test('without tools the template sees None, as transformers passes it', () => {
  const t = new ChatTemplate(new Map([['default', '{{ tools is none }}/{{ tools is not none }}']]));
  assert.equal(t.render({ messages: [] }), 'true/false');
});

test('tokenizer_config.json chat_template list: the tool_use template serves requests with tools', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'brainstem-template-'));
  try {
    await copyFile(join(FIXTURE, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    await writeFile(
      join(dir, 'tokenizer_config.json'),
      JSON.stringify({
        eos_token: { content: '<|im_end|>' },
        chat_template: [
          { name: 'default', template: 'plain:{{ messages[0].content }}' },
          { name: 'tool_use', template: 'tools:{{ tools | length }}:{{ messages[0].content }}' },
        ],
      }),
    );
    const m = await loadTextModel(dir);
    const messages = normalizeMessages([{ role: 'user', content: 'x' }]);
    assert.equal(m.template.render({ messages }), 'plain:x');
    assert.equal(m.template.render({ messages, tools: WEATHER.map((t) => t.openai) }), 'tools:1:x');
    assert.deepEqual([...m.stopTokens], [292], 'eos_token given as an AddedToken object');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a template that raises becomes a request error naming messages', () => {
  const t = new ChatTemplate(new Map([['default', "{{ raise_exception('roles must alternate') }}"]]));
  assert.throws(
    () => t.render({ messages: [] }),
    (e: unknown) => e instanceof RequestError && e.field === 'messages' && /roles must alternate/.test(e.message),
  );
});

test('malformed messages are rejected with the field, rule and value', () => {
  const cases: Array<[unknown, RegExp]> = [
    [[], /^messages: must be a non-empty array/],
    [[{ role: 'robot', content: 'x' }], /^messages\[0\]\.role: must be one of .* got "robot"/],
    [[{ role: 'user', content: 5 }], /^messages\[0\]\.content: must be a string or an array of text parts, got 5/],
    [
      [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }],
      /^messages\[0\]\.content\[0\]: this model takes text only/,
    ],
    [
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ type: 'function', function: { name: 'f', arguments: '{bad' } }],
        },
      ],
      /^messages\[0\]\.tool_calls\[0\]\.function\.arguments: is not valid JSON/,
    ],
    [
      [
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ type: 'function', function: { name: 'f', arguments: '[1]' } }],
        },
      ],
      /must encode a JSON object, got \[1\]/,
    ],
    [
      [{ role: 'user', content: 'x', tool_calls: [] }],
      /^messages\[0\]\.tool_calls: only assistant messages carry tool_calls/,
    ],
  ];
  for (const [messages, re] of cases) {
    assert.throws(
      () => normalizeMessages(messages),
      (e: unknown) => e instanceof RequestError && re.test(e.message),
      JSON.stringify(messages),
    );
  }
  assert.equal(normalizeMessages([{ role: 'developer', content: 'x' }])[0].role, 'system');
});
