// Per-client fairness of a model's queue through the running daemon (tiny synthetic model): a
// WebSocket client that holds its queue_per_client share is refused with the limit named, while
// another WebSocket connection and an HTTP request still queue; and the next turn goes to the
// other client, not to the one that just ran.
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
    models: { fair: { path: model.path, threads: 1, context_length: 2048, queue_size: 4, queue_per_client: 1 } },
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

test('one client past queue_per_client is refused while other clients still queue; the next turn is theirs', async (t) => {
  const a = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  const b = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(() => (a.close(), b.close()));
  const long = { model: 'fair', messages: ASK, max_tokens: 1500, logit_bias: model.banStops };
  const hold = a.call('chat', { ...long, request_id: 'hold' }, 60_000);
  await streamed(a, 'hold');
  const a2 = a.call('chat', { model: 'fair', messages: ASK, max_tokens: 3, request_id: 'a2' }, 60_000);
  await waiting(1);

  const refused = await a.call('chat', { model: 'fair', messages: ASK, max_tokens: 3, request_id: 'a3' });
  assert.equal(refused.error?.code, -32001);
  assert.equal(
    refused.error!.message,
    'model "fair" is busy for this client: it already has 1 request waiting (queue_per_client 1); retry later',
  );
  assert.deepEqual([refused.error!.data.code, refused.error!.data.queue_per_client], ['busy', 1]);

  // Another connection still gets in, and so does an HTTP request (its own connection).
  const b1 = b.call('chat', { ...long, request_id: 'b1' }, 60_000);
  await waiting(2);
  const http = fetch(`${d.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'fair', messages: ASK, max_tokens: 3 }),
  });
  await waiting(3);

  // a ran last: b's request, which queued after a2, runs next.
  await a.call('cancel', { request_id: 'hold' });
  assert.equal((await hold).result.finish_reason, 'cancelled');
  await streamed(b, 'b1');
  assert.ok(!a.notifications.some((n) => n.params?.request_id === 'a2'), 'a2 waits while b1 runs');
  assert.equal(d.models.statusOf('fair').queue.waiting, 2);
  await b.call('cancel', { request_id: 'b1' });
  assert.equal((await b1).result.finish_reason, 'cancelled');
  assert.ok(['stop', 'length'].includes((await a2).result.finish_reason));
  assert.equal((await http).status, 200);
  await waitFor(() => (d.models.statusOf('fair').queue.active === 0 ? true : undefined), 'fair to be idle');
});
