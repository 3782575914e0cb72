// Shutdown deadlines: a service whose stop hangs is logged and left behind, the others still
// stop, and stop() resolves (per service and for the whole shutdown; deadlines are injected).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { Daemon } from '../../daemon/daemon.js';
import { Service } from '../../daemon/service.js';

class Fake extends Service {
  constructor(
    readonly name: string,
    private readonly stopping: 'ok' | 'throw' | 'hang',
    private readonly events: string[],
    override readonly stopTimeoutMs?: number,
  ) {
    super();
  }
  protected async onStart() {
    this.events.push(`start ${this.name}`);
  }
  protected onStop(): Promise<void> {
    this.events.push(`stop ${this.name}`);
    if (this.stopping === 'throw') return Promise.reject(new Error(`${this.name} cannot stop`));
    if (this.stopping === 'hang') return new Promise<void>(() => undefined);
    return Promise.resolve();
  }
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)));
      done();
    },
  });
  return { lines, log: pino({ level: 'info' }, sink) };
}

test('a hanging stop is logged and left behind; Ok, Throw and the services before it still stop', async () => {
  const events: string[] = [];
  const { lines, log } = capture();
  const [ok, thrower, hang] = [
    new Fake('ok', 'ok', events),
    new Fake('throw', 'throw', events),
    new Fake('hang', 'hang', events),
  ];
  const first = new Fake('first', 'ok', events);
  const daemon = new Daemon([first, ok, thrower, hang], log, { serviceMs: 5 });
  await daemon.start();
  const r = await daemon.stop();
  assert.deepEqual(events.slice(4), ['stop hang', 'stop throw', 'stop ok', 'stop first']);
  assert.equal(r.ok, false);
  assert.deepEqual(r.errors, [
    { service: 'hang', message: 'did not stop within 5 ms (service deadline); left behind' },
    { service: 'throw', message: 'throw cannot stop' },
  ]);
  assert.deepEqual([ok.status, first.status, hang.status], ['stopped', 'stopped', 'stopping']);
  assert.equal(daemon.currentState, 'stopped');
  await new Promise((r) => setImmediate(r)); // pino writes asynchronously
  const logged = lines.find((l) => l.service === 'hang');
  assert.equal(logged?.msg, 'service did not stop within 5 ms (service deadline); left behind');
  assert.equal(logged?.timeout_ms, 5);
});

test("a service's own stopTimeoutMs overrides the daemon default", async () => {
  const events: string[] = [];
  const daemon = new Daemon([new Fake('hang', 'hang', events, 1)], pino({ level: 'silent' }), { serviceMs: 60_000 });
  await daemon.start();
  const r = await daemon.stop();
  assert.deepEqual(r.errors, [
    { service: 'hang', message: 'did not stop within 1 ms (service deadline); left behind' },
  ]);
});

test('once the whole-shutdown deadline has passed, later services get no wait but are still asked to stop', async () => {
  const events: string[] = [];
  let t = 0;
  const now = () => t;
  const a = new Fake('a', 'ok', events);
  const hang = new (class extends Fake {
    protected override onStop() {
      t += 1000; // the clock moves past the total deadline while this one hangs
      return super.onStop();
    }
  })('hang', 'hang', events);
  const daemon = new Daemon([a, hang], pino({ level: 'silent' }), { serviceMs: 5, totalMs: 500, now });
  await daemon.start();
  const r = await daemon.stop();
  assert.deepEqual(events.slice(2), ['stop hang', 'stop a']);
  assert.deepEqual(r.errors, [
    { service: 'hang', message: 'did not stop within 5 ms (service deadline); left behind' },
  ]);
  assert.equal(a.status, 'stopped', 'a resolves at once, so even a 0 ms budget sees it stopped');
});

test('a failed start stops what started within the deadline and still rethrows', async () => {
  const events: string[] = [];
  const bad = new (class extends Fake {
    protected override async onStart() {
      throw new Error('no');
    }
  })('bad', 'ok', events);
  const daemon = new Daemon([new Fake('hang', 'hang', events), bad], pino({ level: 'silent' }), { serviceMs: 5 });
  await assert.rejects(daemon.start(), /^Error: bad: no$/);
  assert.deepEqual(events, ['start hang', 'stop bad', 'stop hang'], 'bad cleans up its own failed start');
  assert.equal(daemon.currentState, 'failed');
});
