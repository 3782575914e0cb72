import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Template } from '@huggingface/jinja';
import { QWEN_CHAT_TEMPLATE } from '../../../daemon/tools/chat-template.js';
import { synthTokenizer } from '../../../daemon/tools/tokenizer-synth.js';

const render = (ctx: Record<string, unknown>): string => new Template(QWEN_CHAT_TEMPLATE).render(ctx);

const weatherTool = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};

test('plain chat: system, user, assistant turns and the generation prompt', () => {
  const out = render({
    messages: [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Hello.' },
      { role: 'user', content: 'Bye' },
    ],
    add_generation_prompt: true,
  });
  assert.equal(
    out,
    '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n' +
      '<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n',
  );
  assert.ok(
    !render({ messages: [{ role: 'user', content: 'x' }], add_generation_prompt: false }).endsWith('assistant\n'),
  );
});

test('tools go into the system turn, tool calls and grouped tool results use Qwen markers', () => {
  const out = render({
    messages: [
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: '',
        tool_calls: [
          { type: 'function', function: { name: 'get_weather', arguments: { city: 'Paris' } } },
          { type: 'function', function: { name: 'get_weather', arguments: '{"city": "Rome"}' } },
        ],
      },
      { role: 'tool', content: '{"temp": 20}' },
      { role: 'tool', content: '{"temp": 25}' },
    ],
    tools: [weatherTool],
    add_generation_prompt: true,
  });
  const expected =
    '<|im_start|>system\n# Tools\n\nThese functions can be called. Their signatures are listed inside <tools></tools>:\n<tools>\n' +
    JSON.stringify(weatherTool).replaceAll('":', '": ').replaceAll(',"', ', "') +
    '\n</tools>\n\nTo call one, reply with a JSON object holding its name and arguments inside <tool_call></tool_call>:\n' +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
    '<|im_start|>user\nWeather in Paris and Rome?<|im_end|>\n' +
    '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n' +
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call><|im_end|>\n' +
    '<|im_start|>user\n<tool_response>\n{"temp": 20}\n</tool_response>\n<tool_response>\n{"temp": 25}\n</tool_response><|im_end|>\n' +
    '<|im_start|>assistant\n';
  assert.equal(out, expected);
});

test('system prompt with tools, assistant text before a call, thinking switched off', () => {
  const out = render({
    messages: [
      { role: 'system', content: 'You drive a robot.' },
      { role: 'user', content: 'Open the gripper' },
      { role: 'assistant', content: 'Opening.', tool_calls: [{ name: 'set_gripper', arguments: { gripper: 1 } }] },
    ],
    tools: [weatherTool],
    add_generation_prompt: true,
    enable_thinking: false,
  });
  assert.ok(out.startsWith('<|im_start|>system\nYou drive a robot.\n\n# Tools\n'));
  assert.ok(
    out.includes(
      '<|im_start|>assistant\nOpening.\n<tool_call>\n{"name": "set_gripper", "arguments": {"gripper": 1}}\n</tool_call><|im_end|>\n',
    ),
  );
  assert.ok(out.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'));
});

test('the template ships in tokenizer_config.json', () => {
  assert.equal(synthTokenizer(640).tokenizerConfigJson.chat_template, QWEN_CHAT_TEMPLATE);
});
