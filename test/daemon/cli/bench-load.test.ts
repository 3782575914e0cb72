// `brainstem bench load` runs a small flood end to end and prints the documented JSON keys
// (numbers are benchmark output, not asserted); every invalid kind of message got its error, and
// the MQTT observer flood's refused publishes closed its connections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../../helpers/daemon.js';

test('bench load --json: heartbeat gaps, API latency, error codes, RSS and its breakdown; bad flags exit 2', async () => {
  const r = await runCli(
    [
      'bench',
      'load',
      '--json',
      '--clients',
      '4',
      '--duration',
      '1',
      '--processes',
      '1',
      '--non-reader-every',
      '4',
      '--mqtt-clients',
      '1',
    ],
    {},
    { timeoutMs: 120_000 },
  );
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(out), [
    'machine',
    'clients',
    'flood_nice',
    'non_readers',
    'seconds',
    'heartbeat',
    'api',
    'mqtt',
    'motion',
    'event_loop_delay_ms',
    'rss_mib',
    'memory_mib',
    'target',
  ]);
  assert.equal(out.non_readers, 1);
  assert.ok([0, 10].includes(out.flood_nice), `flood_nice ${out.flood_nice}`);
  assert.ok(out.heartbeat.received > 0, 'the observer received heartbeats');
  assert.deepEqual(Object.keys(out.heartbeat.gap_ms), ['p50', 'p99', 'max']);
  assert.equal(typeof out.heartbeat.gaps_over_2x_period, 'number');
  assert.ok(out.api.valid_call_latency_ms.max > 0, 'valid calls were answered');
  for (const code of ['-32700', '-32601', '-32602', '-32600'])
    assert.ok(out.api.error_codes[code] > 0, `invalid traffic got ${code}`);
  // A refused publish costs the observer its connection: every session opened was closed after one.
  assert.ok(out.mqtt.connects > 0, 'the MQTT flood connected');
  assert.equal(out.mqtt.closed_after_publish, out.mqtt.connects);
  // $SYS/# and elsewhere/# are outside an observer's grants: two refusals in every SUBACK.
  assert.equal(out.mqtt.refused_subscriptions, 2 * out.mqtt.connects);
  assert.equal(typeof out.motion.disturbed, 'boolean');
  assert.ok(Array.isArray(out.motion.disturbed_at_s), 'when motions were disturbed');
  assert.deepEqual(Object.keys(out.machine), ['cpus', 'load_avg_1m_before', 'load_avg_1m_after']);
  assert.deepEqual(Object.keys(out.rss_mib), ['before', 'peak', 'after', 'growth']);
  // Where the memory is: before, peak, after the flood, and after a full collection.
  assert.deepEqual(Object.keys(out.memory_mib), ['before', 'peak', 'after', 'after_gc']);
  for (const s of Object.values(out.memory_mib) as Record<string, number>[])
    assert.deepEqual(Object.keys(s), ['rss', 'heap_used', 'heap_total', 'external', 'array_buffers']);
  assert.equal((await runCli(['bench', 'load', '--clients', '0'])).code, 2);
});
