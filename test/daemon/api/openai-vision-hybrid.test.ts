// Images on a hybrid model (synthetic qwen3_5_moe --vision: Gated DeltaNet + gated attention,
// interleaved M-RoPE, ONNX tower without DeepStack) through the official OpenAI client. A follow-up
// question about the same image reuses the cached prefix: the session is truncated past the image,
// so its recurrent state is rebuilt by a replay that must run the image rows again. The answer
// must equal that of a model that saw the follow-up fresh.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { patternDataUrl } from '../../helpers/images.js';
import { synthModel } from '../../../daemon/tools/synth.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { tempDir, type TempDir } from '../../helpers/temp.js';

let dir: TempDir;
let d: TestDaemon;
let client: OpenAI;

before(async () => {
  dir = tempDir('bs-hybrid-vl-');
  synthModel({ arch: 'qwen3_5_moe', shape: 'tiny', out: dir.path, seed: 4, force: true, vision: true });
  const model = { path: dir.path, threads: 1, context_length: 2048, keep_alive: -1 };
  // Two names for one folder: separate session pools, so `fresh` never reuses `hy`'s cache.
  d = await startTestDaemon({ models: { hy: model, fresh: model } });
  client = new OpenAI({ baseURL: `${d.http}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 });
});

after(async () => {
  await d?.stop();
  dir?.remove();
});

const pattern = (seed: number) => patternDataUrl(seed, 256, 192);

const ask = (model: string, url: string, question: string): OpenAI.ChatCompletionCreateParamsNonStreaming => ({
  model,
  max_tokens: 8,
  temperature: 0,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'image_url', image_url: { url } },
        { type: 'text', text: question },
      ],
    },
  ],
});

test('qwen3_5_moe serves images; a follow-up on the cached image replays it and answers as a fresh session', async () => {
  const [a, b] = [await pattern(3), await pattern(8)];
  const first = await client.chat.completions.create(ask('hy', a, 'What is in this picture?'));
  const follow = await client.chat.completions.create(ask('hy', a, 'Describe the colours, please.'));
  // 256×192 pixels are 8×6 merged patches: 48 image rows after the template's first tokens (a
  // session is reused when at least half its cache is kept: the image outweighs the question).
  const cached = follow.usage!.prompt_tokens_details!.cached_tokens!;
  assert.ok(cached > 48, `the image came from the prefix cache (${cached} cached tokens)`);
  assert.ok(cached < follow.usage!.prompt_tokens - 1, 'the question after it did not');
  const other = await client.chat.completions.create(ask('hy', b, 'What is in this picture?'));
  assert.notEqual(other.choices[0]!.message.content, first.choices[0]!.message.content, 'the image decides the output');
  const fresh = await client.chat.completions.create(ask('fresh', a, 'Describe the colours, please.'));
  assert.equal(fresh.usage!.prompt_tokens_details!.cached_tokens ?? 0, 0);
  assert.equal(follow.choices[0]!.message.content, fresh.choices[0]!.message.content);
  const status = d.models.statusOf('hy');
  assert.deepEqual(status.inputs, ['text', 'image']);
  assert.equal(status.vision?.deepstack_layers, 0);
});
