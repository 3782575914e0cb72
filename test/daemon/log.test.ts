import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Logs } from '../../daemon/log.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  return { lines, destination: { write: (s: string) => void lines.push(JSON.parse(s)) } };
}

test('JSON lines carry the namespace; levels apply per namespace and cover children', () => {
  const out = capture();
  const logs = new Logs(
    { level: 'info', format: 'auto', levels: { mqtt: 'debug', 'mqtt.broker': 'warn', 'api.rpc': 'silent' } },
    { destination: out.destination, isTty: false },
  );
  logs.get('mqtt.client').debug('client detail');
  logs.get('mqtt.broker').info('broker chatter');
  logs.get('mqtt.broker').warn('broker warning');
  logs.get('api.http').debug('http detail');
  logs.get('api.http').info('http info');
  logs.get('api.rpc').error('rpc error');
  logs.get('mqttx').debug('not a child of mqtt');
  assert.deepEqual(
    out.lines.map((l) => [l.ns, l.msg, l.level]),
    [
      ['mqtt.client', 'client detail', 20],
      ['mqtt.broker', 'broker warning', 40],
      ['api.http', 'http info', 30],
    ],
  );
});

test('levelFor picks the longest matching namespace and the default otherwise', () => {
  const logs = new Logs(
    { level: 'warn', format: 'json', levels: { a: 'debug', 'a.b': 'error' } },
    { destination: capture().destination },
  );
  assert.equal(logs.levelFor('a'), 'debug');
  assert.equal(logs.levelFor('a.c'), 'debug');
  assert.equal(logs.levelFor('a.b.c'), 'error');
  assert.equal(logs.levelFor('b'), 'warn');
  assert.equal(logs.get('x'), logs.get('x'), 'one logger per namespace');
});
