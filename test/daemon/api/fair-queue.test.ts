// Per-client fairness of a model's queue through the running daemon (tiny synthetic model): a
// WebSocket client alone may fill the queue; another connection then takes the place of its newest
// request (refused with queue_per_client named); an HTTP request finding every client within its
// share is refused with queue_size; and the next turn goes to the other client, not the one that ran.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestDaemon, TEST_TOKEN, type TestDaemon } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';
import { synthTiny, type TinyModel } from '../../helpers/serving.js';
import { waitFor } from '../../helpers/wait.js';

let model: TinyModel;
let d: TestDaemon;
const ASK = [{ role: 'user', content: 'Move the left arm up.' }];

before(async () => {
  model = await synthTiny(7);
  d = await startTestDaemon({
    engine: { keep_alive: -1 },
    models: { fair: { path: model.path, threads: 1, context_length: 2048, queue_size: 2, queue_per_client: 1 } },
  });
});

after(async () => {
  await d?.stop();
  model?.remove();
});

const waiting = (n: number) =>
  waitFor(() => (d.models.statusOf('fair').queue.waiting === n ? true : undefined), `${n} waiting on fair`);
const streamed = (c: RpcTestClient, id: string) =>
  waitFor(() => (c.notifications.some((n) => n.params?.request_id === id) ? true : undefined), `${id} to stream`);

test('one client may fill the queue; another takes the place of its newest request; the next turn is theirs', async (t) => {
  const a = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const b = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => (a.close(), b.close()));
  const long = { model: 'fair', messages: ASK, max_tokens: 1500, logit_bias: model.banStops };
  const short = (id: string) => ({ model: 'fair', messages: ASK, max_tokens: 3, request_id: id });
  const hold = a.call('chat', { ...long, request_id: 'hold' }, 60_000);
  await streamed(a, 'hold');
  const a2 = a.call('chat', short('a2'), 60_000);
  const a3 = a.call('chat', short('a3'), 60_000);
  await waiting(2);
  const alone = await a.call('chat', short('a4'));
  assert.equal(alone.error?.message, 'model "fair" is busy: 2 requests already waiting (queue_size 2); retry later');

  // b, under its share, takes a3's place.
  const b1 = b.call('chat', { ...long, request_id: 'b1' }, 60_000);
  const displaced = await a3;
  assert.equal(displaced.error?.code, -32001);
  assert.equal(
    displaced.error!.message,
    'model "fair" is busy for this client: it already has 2 requests waiting (queue_per_client 1); retry later',
  );
  assert.deepEqual([displaced.error!.data.code, displaced.error!.data.queue_per_client], ['busy', 1]);
  await waiting(2);
  const over = await a.call('chat', short('a5'));
  assert.match(over.error!.message, /it already has 1 request waiting \(queue_per_client 1\)/);
  // Every client within its share: an HTTP request (its own connection) finds the queue full.
  const http = await fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fair', messages: ASK, max_tokens: 3 }),
  });
  assert.equal(http.status, 429);
  assert.match(((await http.json()) as { error: { message: string } }).error.message, /queue_size 2/);

  // a ran last: b's request, which queued after a2, runs next.
  await a.call('cancel', { request_id: 'hold' });
  assert.equal((await hold).result.finish_reason, 'cancelled');
  await streamed(b, 'b1');
  assert.ok(!a.notifications.some((n) => n.params?.request_id === 'a2'), 'a2 waits while b1 runs');
  assert.equal(d.models.statusOf('fair').queue.waiting, 1);
  await b.call('cancel', { request_id: 'b1' });
  assert.equal((await b1).result.finish_reason, 'cancelled');
  assert.ok(['stop', 'length'].includes((await a2).result.finish_reason));
  await waitFor(() => (d.models.statusOf('fair').queue.active === 0 ? true : undefined), 'fair to be idle');
});
