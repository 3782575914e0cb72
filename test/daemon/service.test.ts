import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Service } from '../../daemon/service.js';

class Probe extends Service {
  readonly events: string[] = [];
  gate?: Promise<void>;
  failStart = false;
  failStop = false;
  degraded?: string;
  constructor(readonly name = 'probe') {
    super();
  }
  protected async onStart() {
    this.events.push('start');
    await this.gate;
    if (this.failStart) throw new Error('port busy');
  }
  protected async onStop() {
    this.events.push('stop');
    if (this.failStop) throw new Error('stuck');
  }
  protected override describe() {
    return { degraded: this.degraded, detail: { port: 1 } };
  }
}

test('start and stop are idempotent, also when called concurrently', async () => {
  const s = new Probe();
  await Promise.all([s.start(), s.start()]);
  await s.start();
  assert.equal(s.status, 'ready');
  await Promise.all([s.stop(), s.stop()]);
  await s.stop();
  assert.deepEqual(s.events, ['start', 'stop']);
  assert.equal(s.status, 'stopped');
});

test('stop before any start does nothing', async () => {
  const s = new Probe();
  await s.stop();
  assert.deepEqual(s.events, []);
});

test('stop during start waits for start to finish, then stops', async () => {
  const s = new Probe();
  let open!: () => void;
  s.gate = new Promise((r) => (open = r));
  const started = s.start();
  const stopped = s.stop();
  await new Promise((r) => setImmediate(r));
  assert.equal(s.status, 'starting');
  open();
  await Promise.all([started, stopped]);
  assert.deepEqual(s.events, ['start', 'stop']);
  assert.equal(s.status, 'stopped');
});

test('a failed start cleans up, reports failed with the reason, and can be restarted', async () => {
  const s = new Probe();
  s.failStart = true;
  await assert.rejects(s.start(), /port busy/);
  assert.deepEqual(s.events, ['start', 'stop'], 'onStop ran to release partial resources');
  assert.deepEqual(s.health(), { status: 'failed', detail: { reason: 'port busy' } });
  await s.stop();
  assert.equal(s.status, 'stopped');
  assert.deepEqual(s.events, ['start', 'stop'], 'no second onStop');
  s.failStart = false;
  await s.start();
  assert.equal(s.status, 'ready');
});

test('health carries detail when ready and reports degraded with its reason', async () => {
  const s = new Probe();
  assert.deepEqual(s.health(), { status: 'stopped' });
  await s.start();
  assert.deepEqual(s.health(), { status: 'ready', detail: { port: 1 } });
  s.degraded = 'broker lost';
  assert.deepEqual(s.health(), { status: 'degraded', detail: { port: 1, reason: 'broker lost' } });
});

test('a failing stop rejects and marks the service failed', async () => {
  const s = new Probe();
  await s.start();
  s.failStop = true;
  await assert.rejects(s.stop(), /stuck/);
  assert.equal(s.status, 'failed');
});
