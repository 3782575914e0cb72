// Images through the OpenAI API with the official client, against a daemon serving a synthetic
// qwen3_vl_moe model (random weights, real engine, ONNX tower on onnxruntime-node): the image
// decides the output (two images differ; the same image twice gives the same tokens, the second
// time from the encoder cache and the prefix cache); bad images get 400 and the daemon keeps serving.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import sharp from 'sharp';
import { hugeHeaderPng, patternDataUrl } from '../../helpers/images.js';
import { synthModel } from '../../../daemon/tools/synth.js';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { tempDir, type TempDir } from '../../helpers/temp.js';

let dir: TempDir;
let textDir: TempDir;
let d: TestDaemon;
let client: OpenAI;

before(async () => {
  dir = tempDir('bs-vl-model-');
  synthModel({ arch: 'qwen3_vl_moe', shape: 'tiny', out: dir.path, seed: 2, force: true });
  textDir = tempDir('bs-text-model-');
  synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: textDir.path, seed: 2, force: true });
  const text = { path: textDir.path, threads: 1, context_length: 2048 };
  d = await startTestDaemon({
    models: { vl: { path: dir.path, threads: 1, context_length: 2048, keep_alive: -1 }, text },
  });
  client = new OpenAI({ baseURL: `${d.http}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 });
});

after(async () => {
  await d?.stop();
  dir?.remove();
  textDir?.remove();
});

const pattern = (seed: number) => patternDataUrl(seed);

const ask = (url: string): OpenAI.ChatCompletionCreateParamsNonStreaming => ({
  model: 'vl',
  max_tokens: 6,
  temperature: 0,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in this picture?' },
        { type: 'image_url', image_url: { url } },
      ],
    },
  ],
});

test('two images give different tokens; the same image twice gives the same tokens, the second from the caches', async () => {
  const [a, b] = [await pattern(1), await pattern(2)];
  const ra = await client.chat.completions.create(ask(a));
  const again = await client.chat.completions.create(ask(a));
  assert.equal(again.choices[0]!.message.content, ra.choices[0]!.message.content);
  assert.equal(again.usage!.prompt_tokens, ra.usage!.prompt_tokens);
  const cached = again.usage!.prompt_tokens_details!.cached_tokens!;
  assert.equal(cached, again.usage!.prompt_tokens - 1, 'all but the last prompt token came from the prefix cache');
  const rb = await client.chat.completions.create(ask(b));
  assert.notEqual(rb.choices[0]!.message.content, ra.choices[0]!.message.content);
  // Same text, another image: the cache keeps only the text before the image.
  assert.ok(rb.usage!.prompt_tokens_details!.cached_tokens! < cached);
  const status = d.models.statusOf('vl');
  assert.deepEqual(status.inputs, ['text', 'image']);
  assert.equal(status.vision?.images_encoded, 2);
  assert.equal(status.vision?.image_cache_hits, 1);
  assert.equal(status.vision?.provider, 'cpu');
  assert.ok(status.memory.vision_bytes > 0);
  assert.deepEqual(d.models.statusOf('text').inputs, ['text']);
});

test('bad images are refused with 400 naming the part; the daemon keeps serving', async () => {
  const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#336699' } })
    .jpeg()
    .toBuffer();
  const huge = await hugeHeaderPng();
  const cases: [string, RegExp][] = [
    [`data:image/jpeg;base64,${jpeg.subarray(0, jpeg.length >> 1).toString('base64')}`, /does not decode|readable/],
    [`data:image/png;base64,${huge.toString('base64')}`, /50000×50000/],
    [`data:image/png;base64,${jpeg.toString('base64')}`, /declared image\/png but the bytes are jpeg/],
    [`data:application/pdf;base64,${jpeg.toString('base64')}`, /not an image type/],
    ['https://example.com/cat.png', /does not fetch/],
  ];
  for (const [url, message] of cases) {
    await assert.rejects(client.chat.completions.create(ask(url)), (e: unknown) => {
      assert.ok(e instanceof OpenAI.APIError, String(e));
      assert.equal(e.status, 400, e.message);
      assert.match(e.message, /messages\[0\]\.content\[1\]/);
      assert.match(e.message, message);
      return true;
    });
  }
  const png = await pattern(3);
  const ok = await client.chat.completions.create(ask(png));
  assert.equal(ok.choices.length, 1);
  // The same bytes again (now from the encoder's cache) but declared as another type: still refused.
  const mislabelled = png.replace('data:image/png', 'data:image/jpeg');
  await assert.rejects(client.chat.completions.create(ask(mislabelled)), (e: unknown) => {
    assert.equal((e as InstanceType<typeof OpenAI.APIError>).status, 400);
    assert.match((e as Error).message, /messages\[0\]\.content\[1\].*declared image\/jpeg but the bytes are png/);
    return true;
  });
});

test('a vision token typed into the text is a placeholder mismatch (400); a text-only model refuses images', async () => {
  const body = ask(await pattern(1));
  (body.messages[0]!.content as { type: string; text?: string }[])[0]!.text = 'look <|image_pad|> here';
  await assert.rejects(client.chat.completions.create(body), (e: unknown) => {
    assert.equal((e as InstanceType<typeof OpenAI.APIError>).status, 400);
    assert.match((e as Error).message, /2 image placeholder token\(s\) for 1 image/);
    return true;
  });
  await assert.rejects(client.chat.completions.create({ ...ask(await pattern(1)), model: 'text' }), (e: unknown) => {
    assert.equal((e as InstanceType<typeof OpenAI.APIError>).status, 400);
    assert.match((e as Error).message, /takes text only/);
    return true;
  });
});

test('WebSocket chat takes the same image parts; a bad image is invalid params and the socket stays open', async () => {
  const ws = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  try {
    const url = await pattern(1);
    const call = (u: string) => ws.call('chat', { ...ask(u), stream: false }, 60_000);
    const ok = await call(url);
    const http = await client.chat.completions.create(ask(url));
    assert.equal(ok.result.message.content, http.choices[0]!.message.content);
    const bad = await call('data:image/png;base64,bm90IGFuIGltYWdl');
    assert.equal(bad.error?.code, -32602, JSON.stringify(bad.error));
    assert.match(bad.error!.message, /messages\[0\]\.content\[1\]/);
    assert.equal((await call(url)).result.finish_reason, ok.result.finish_reason);
  } finally {
    await ws.close();
  }
});

test('images whose tokens cannot fit the context are refused before the tower runs any of them', async () => {
  const before = d.models.statusOf('vl').vision!.images_encoded;
  // Nine distinct 512² images (256 tokens each from their headers) in a context of 2048.
  const content: OpenAI.ChatCompletionContentPart[] = [{ type: 'text', text: 'Compare these.' }];
  for (let i = 0; i < 9; i++) {
    const png = await sharp({ create: { width: 512, height: 512, channels: 3, background: { r: i, g: 9, b: 9 } } })
      .png()
      .toBuffer();
    content.push({ type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } });
  }
  const body = { ...ask(''), messages: [{ role: 'user' as const, content }] };
  await assert.rejects(client.chat.completions.create(body), (e: unknown) => {
    assert.equal((e as InstanceType<typeof OpenAI.APIError>).status, 400);
    assert.match((e as Error).message, /the prompt has \d{4} tokens; the context holds 2048/);
    return true;
  });
  assert.equal(d.models.statusOf('vl').vision!.images_encoded, before, 'no image was encoded');
});
