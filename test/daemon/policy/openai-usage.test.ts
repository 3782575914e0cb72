// The `openai` provider's token usage and recorded output against fake servers: usage a server
// leaves out or gets wrong becomes the chars/4 estimate (marked), so token budgets still count;
// a huge but valid reply is clipped where it is recorded and re-sent, not where it is parsed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sendError } from '../../../daemon/api/http.js';
import { outputFailure } from '../../../daemon/api/serving-errors.js';
import { ToolCallError } from '../../../daemon/engine/tool-calls/errors.js';
import { OpenAiProvider } from '../../../daemon/policy/providers/openai.js';
import { RECORDED_OUTPUT_CHARS } from '../../../daemon/policy/providers/openai-format.js';
import type { DecisionRequest } from '../../../daemon/policy/providers/types.js';
import { estimateTokens } from '../../../daemon/policy/tokens.js';
import { policyTools } from '../../../daemon/policy/tools.js';
import { serve } from '../../helpers/loopback-http.js';

const signal = new AbortController().signal;
const req: DecisionRequest = {
  messages: [
    { role: 'system', text: 'You drive one arm. Reply with exactly one tool call.' },
    { role: 'user', content: [{ type: 'text', text: 'Put the block in the bowl.' }] },
  ],
  tools: policyTools(['arm'], ['top']),
};
const promptEstimate = estimateTokens(req.messages, req.tools);
const call = '{"name": "get_state", "arguments": {}}';

/** One decision from a server answering `body` (HTTP `status`). */
async function decideAgainst(body: unknown, status = 200) {
  const server = await serve((q, res) => {
    q.resume();
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  try {
    return await new OpenAiProvider({ baseUrl: server.url, model: 'm' }).decide(req, signal);
  } finally {
    await server.close();
  }
}

const reply = (usage: unknown, content = call) => ({
  choices: [{ message: { content }, finish_reason: 'stop' }],
  ...(usage === undefined ? {} : { usage }),
});

test('no usage in the answer: the chars/4 estimate of prompt and reply, marked estimated', async () => {
  const d = await decideAgainst(reply(undefined));
  assert.ok(promptEstimate > 100, String(promptEstimate));
  assert.deepEqual(d.usage, {
    promptTokens: promptEstimate,
    completionTokens: Math.ceil(call.length / 4),
    estimated: true,
  });
});

test('reported usage: kept when valid (rounded, cached within the prompt), estimated where negative or not a number', async () => {
  const cases: [unknown, object][] = [
    [
      { prompt_tokens: 120, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 100 } },
      { promptTokens: 120, completionTokens: 7, cachedTokens: 100, prefilledTokens: 20 },
    ],
    [
      { prompt_tokens: 10.6, completion_tokens: 0 },
      { promptTokens: 11, completionTokens: 0 },
    ],
    [
      { prompt_tokens: 50, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 80 } },
      { promptTokens: 50, completionTokens: 5, cachedTokens: 50, prefilledTokens: 0 },
    ],
    [
      { prompt_tokens: -5000, completion_tokens: -3 },
      { promptTokens: promptEstimate, completionTokens: Math.ceil(call.length / 4), estimated: true },
    ],
    [
      { prompt_tokens: '9', completion_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } },
      { promptTokens: promptEstimate, completionTokens: 4, estimated: true },
    ],
    [
      { prompt_tokens: 30, completion_tokens: null },
      { promptTokens: 30, completionTokens: Math.ceil(call.length / 4), estimated: true },
    ],
  ];
  for (const [usage, want] of cases) {
    const d = await decideAgainst(reply(usage));
    assert.deepEqual(d.usage, want, JSON.stringify(usage));
  }
});

test('a model_output_error reply counts its estimated tokens, not zero', async () => {
  const raw = '<tool_call>{"name": "move_to", "arguments": {"target": ';
  const server = await serve((q, res) => {
    q.resume();
    sendError(res, outputFailure(new ToolCallError('unclosed_tag', 'the output ended inside <tool_call>', raw)));
  });
  try {
    const d = await new OpenAiProvider({ baseUrl: server.url, model: 'm' }).decide(req, signal);
    assert.equal(d.finishReason, 'error');
    assert.deepEqual(d.usage, {
      promptTokens: promptEstimate,
      completionTokens: Math.ceil(raw.length / 4),
      estimated: true,
    });
  } finally {
    await server.close();
  }
});

test('a huge valid reply: parsed whole, clipped in raw and in the history message, saying so', async () => {
  const prose = 'x'.repeat(200_000);
  const big = await decideAgainst({
    choices: [
      {
        message: {
          content: prose,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_state', arguments: '{}' } }],
        },
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 10, completion_tokens: 50_000 },
  });
  assert.ok(big.call.ok && big.call.name === 'get_state', JSON.stringify(big.call));
  assert.equal(big.content.length, prose.length);
  // Compared by length and tail: a failed equality would print 16 KiB of x.
  const clipped = (text: string, whole: number, what: string) => {
    const note = `… [truncated: ${whole} characters, the first ${RECORDED_OUTPUT_CHARS} kept]`;
    assert.equal(text.length, RECORDED_OUTPUT_CHARS + note.length, what);
    assert.ok(text.endsWith(`x${note}`), `${what}: ${text.slice(-100)}`);
  };
  const whole = `${prose}\n{"name":"get_state","arguments":{}}`.length;
  clipped(big.raw, whole, 'raw');
  // The call stays paired with its result; only the text beside it is clipped.
  assert.equal(big.message.toolCall?.id, 'c1');
  clipped(big.message.text, prose.length, 'message');
  // Malformed and huge: the history keeps the clipped text.
  const text = `{"name": "get_state", "arguments": {"pad": "${'y'.repeat(100_000)}"} trailing`;
  const bad = await decideAgainst(reply({ prompt_tokens: 1, completion_tokens: 1 }, text));
  assert.equal(bad.call.ok, false);
  assert.ok(bad.raw.length < RECORDED_OUTPUT_CHARS + 100 && bad.raw.endsWith(' kept]'), bad.raw.slice(-80));
  assert.deepEqual(bad.message, { role: 'assistant', text: bad.raw });
  // A valid call whose arguments alone pass the limit goes to the history as clipped text.
  const args = `{"pad": "${'z'.repeat(100_000)}"}`;
  const wide = await decideAgainst({
    choices: [
      {
        message: { content: '', tool_calls: [{ id: 'c2', function: { name: 'get_state', arguments: args } }] },
        finish_reason: 'tool_calls',
      },
    ],
  });
  assert.ok(wide.call.ok);
  assert.deepEqual(wide.message, { role: 'assistant', text: wide.raw });
  assert.ok(wide.raw.length < RECORDED_OUTPUT_CHARS + 100);
});
