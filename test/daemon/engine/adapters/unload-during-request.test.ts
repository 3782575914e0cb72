// An adapter unloaded while a chat request that chose it is still on its way to its session (here:
// opening a new one, held by a gate) fails that request as one arriving after the unload would: a
// request error naming the adapter, not an engine error. Real engine, tiny synthetic model.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { ChatService } from '../../../../daemon/engine/chat-service.js';
import type { ModelProfile } from '../../../../daemon/engine/config.js';
import { ModelRegistry } from '../../../../daemon/engine/model-registry.js';
import { RequestError } from '../../../../daemon/engine/request-error.js';
import { loadNativeModel, type ModelLoader } from '../../../../daemon/engine/served-model.js';
import { ServingMetrics } from '../../../../daemon/engine/serving-metrics.js';
import { synthTiny, type TinyModel } from '../../../helpers/serving.js';
import { synthAdapterTemp } from './helpers.js';

let model: TinyModel;
before(async () => {
  model = await synthTiny(3);
});
after(() => model?.remove());

async function drain(gen: AsyncGenerator<unknown, unknown>): Promise<unknown> {
  for (;;) {
    const step = await gen.next();
    if (step.done) return step.value;
  }
}

test('an adapter unloaded between a request choosing it and its session starting is a request error naming it', async (t) => {
  const path = synthAdapterTemp(t, { model: model.path, format: 'peft', rank: 4, alpha: 8, rms: 0.02, seed: 1 });
  // New sessions wait for `open` while `gated`; `reached` resolves when one does.
  let gated = false;
  let reached!: () => void;
  let open!: () => void;
  const atGate = new Promise<void>((r) => (reached = r));
  const gate = new Promise<void>((r) => (open = r));
  const loader: ModelLoader = async (p, stage) => {
    const m = await loadNativeModel(p, stage);
    return {
      ...m,
      createSession: async () => {
        if (gated) {
          reached();
          await gate;
        }
        return m.createSession();
      },
    };
  };
  const profile: ModelProfile = {
    path: model.path,
    threads: 1,
    contextLength: 1024,
    keepAliveMs: -1,
    queueSize: 4,
    sessions: 2,
  };
  const metrics = new ServingMetrics(new Registry());
  const registry = new ModelRegistry({ models: { tiny: profile }, loader, metrics, log: pino({ level: 'silent' }) });
  await registry.start();
  t.after(() => registry.stop());
  const chat = new ChatService(registry, metrics);
  await registry.loadAdapter('tiny', 'style', { path });
  // The first session holds a base-model cache, so the adapter request opens a second one.
  await drain(chat.run({ body: { model: 'tiny', messages: [{ role: 'user', content: 'hello' }], max_tokens: 2 } }));
  gated = true;
  const gen = chat.run({
    body: { model: 'tiny:style', messages: [{ role: 'user', content: 'which arm?' }], max_tokens: 2 },
  });
  const first = gen.next();
  await atGate;
  registry.unloadAdapter('tiny', 'style');
  open();
  await assert.rejects(
    first,
    (e: unknown) =>
      e instanceof RequestError &&
      e.field === 'model' &&
      e.rule === 'adapter' &&
      /adapter "style" is not loaded for model "tiny"/.test(e.message),
  );
  const status = registry.statusOf('tiny');
  assert.deepEqual([status.sessions.in_use, status.queue.active], [0, 0], 'the session and the turn are released');
});
