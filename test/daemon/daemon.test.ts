import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { Daemon, stopOnSignals, type SignalSource } from '../../daemon/daemon.js';
import { Service } from '../../daemon/service.js';

const log = pino({ level: 'silent' });

class Recorder extends Service {
  failStart = false;
  failStop = false;
  gate?: Promise<void>;
  degraded?: string;
  constructor(
    readonly name: string,
    private readonly events: string[],
  ) {
    super();
  }
  protected async onStart() {
    this.events.push(`start ${this.name}`);
    await this.gate;
    if (this.failStart) throw new Error(`${this.name} cannot start`);
  }
  protected async onStop() {
    this.events.push(`stop ${this.name}`);
    if (this.failStop) throw new Error(`${this.name} cannot stop`);
  }
  protected override describe() {
    return { degraded: this.degraded };
  }
}

function trio() {
  const events: string[] = [];
  const services = ['a', 'b', 'c'].map((n) => new Recorder(n, events));
  return { events, services, daemon: new Daemon(services, log) };
}

test('services start in order and stop in reverse order', async () => {
  const { events, daemon } = trio();
  await daemon.start();
  assert.equal(daemon.currentState, 'running');
  const r = await daemon.stop();
  assert.deepEqual(r, { ok: true, errors: [] });
  assert.deepEqual(events, ['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a']);
});

test('a start failure stops what was started and names the service', async () => {
  const { events, services, daemon } = trio();
  services[1]!.failStart = true;
  await assert.rejects(daemon.start(), /^Error: b: b cannot start$/);
  assert.deepEqual(events, ['start a', 'start b', 'stop b', 'stop a']);
  assert.equal(daemon.currentState, 'failed');
  assert.equal(daemon.health().status, 'failed');
});

test('stop reaches every service even when some fail, and reports the failures', async () => {
  const { events, services, daemon } = trio();
  await daemon.start();
  services[2]!.failStop = true;
  services[1]!.failStop = true;
  const r = await daemon.stop();
  assert.equal(r.ok, false);
  assert.deepEqual(r.errors, [
    { service: 'c', message: 'c cannot stop' },
    { service: 'b', message: 'b cannot stop' },
  ]);
  assert.deepEqual(events.slice(3), ['stop c', 'stop b', 'stop a']);
  assert.equal(services[0]!.status, 'stopped');
});

test('health: starting until every service is up, degraded still ready, stopping not ready', async () => {
  const { services, daemon } = trio();
  assert.deepEqual(daemon.health(), {
    status: 'starting',
    ready: false,
    services: { a: { status: 'stopped' }, b: { status: 'stopped' }, c: { status: 'stopped' } },
  });
  let open!: () => void;
  services[1]!.gate = new Promise((r) => (open = r));
  const starting = daemon.start();
  await new Promise((r) => setImmediate(r));
  assert.equal(daemon.health().status, 'starting');
  assert.equal(daemon.health().services.a!.status, 'ready');
  open();
  await starting;
  assert.deepEqual(daemon.health().status, 'ready');
  services[2]!.degraded = 'lost broker';
  assert.deepEqual([daemon.health().status, daemon.health().ready], ['degraded', true]);
  const stopping = daemon.stop();
  assert.deepEqual([daemon.health().status, daemon.health().ready], ['stopping', false]);
  await stopping;
  assert.equal(daemon.health().status, 'stopped');
});

test('a signal during start stops the started services and skips the rest', async () => {
  const { events, services, daemon } = trio();
  let open!: () => void;
  services[0]!.gate = new Promise((r) => (open = r));
  const starting = daemon.start();
  const stopping = daemon.stop();
  open();
  await starting;
  await stopping;
  assert.deepEqual(events, ['start a', 'stop a']);
  assert.equal(daemon.currentState, 'stopped');
});

test('a signal while the last service starts never reports the daemon running', async () => {
  const { services, daemon } = trio();
  let open!: () => void;
  services[2]!.gate = new Promise((r) => (open = r));
  const starting = daemon.start();
  await new Promise((r) => setImmediate(r));
  const stopping = daemon.stop();
  const states: string[] = [];
  open();
  await starting.then(() => states.push(daemon.currentState));
  await stopping;
  assert.deepEqual(states, ['stopping']);
  assert.equal(daemon.currentState, 'stopped');
});

class FakeProcess extends EventEmitter implements SignalSource {
  override on(signal: 'SIGINT' | 'SIGTERM', fn: () => void) {
    return super.on(signal, fn);
  }
  override off(signal: 'SIGINT' | 'SIGTERM', fn: () => void) {
    return super.off(signal, fn);
  }
}

test('SIGTERM stops the daemon and resolves exit code 0, then removes the handlers', async () => {
  const { events, daemon } = trio();
  await daemon.start();
  const proc = new FakeProcess();
  const exits: number[] = [];
  const done = stopOnSignals(daemon, log, proc, (c) => exits.push(c));
  proc.emit('SIGTERM');
  assert.equal(await done, 0);
  assert.deepEqual(events.slice(3), ['stop c', 'stop b', 'stop a']);
  assert.deepEqual(exits, []);
  assert.equal(proc.listenerCount('SIGTERM') + proc.listenerCount('SIGINT'), 0);
});

test('a failed stop gives exit code 1', async () => {
  const { services, daemon } = trio();
  await daemon.start();
  services[0]!.failStop = true;
  const proc = new FakeProcess();
  const done = stopOnSignals(daemon, log, proc, () => undefined);
  proc.emit('SIGINT');
  assert.equal(await done, 1);
});

test('a second SIGINT forces exit 130 and a second SIGTERM 143 while a stop hangs', async () => {
  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    const events: string[] = [];
    const slow = new (class extends Recorder {
      protected override onStop() {
        events.push('stop slow');
        return new Promise<void>(() => undefined); // never finishes
      }
    })('slow', events);
    const daemon = new Daemon([slow], log, { serviceMs: 20 }); // the deadline ends the test's hang
    await daemon.start();
    const proc = new FakeProcess();
    const exits: number[] = [];
    void stopOnSignals(daemon, log, proc, (c) => exits.push(c));
    proc.emit(signal === 'SIGINT' ? 'SIGTERM' : 'SIGINT');
    assert.deepEqual(exits, []);
    proc.emit(signal);
    assert.deepEqual(exits, [code], signal);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(events, ['start slow', 'stop slow'], 'the stop had begun and was still pending');
  }
});
