import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  DELIVERY,
  checkBase,
  daemonTopics,
  mqtt5Properties,
  parseRobotTopic,
  robotFilter,
  robotTopic,
} from '../../../robot/link/protocol.js';

test('topics live under the configured base', () => {
  assert.equal(robotTopic('lab/brainstem', 'arm1', 'state'), 'lab/brainstem/robots/arm1/state');
  assert.deepEqual(daemonTopics('b'), { heartbeat: 'b/daemon/heartbeat', availability: 'b/daemon/availability' });
  assert.equal(robotFilter('b', 'events'), 'b/robots/+/events');
  assert.deepEqual(parseRobotTopic('lab/b', 'lab/b/robots/arm-2/events'), { robot: 'arm-2', suffix: 'events' });
  assert.equal(parseRobotTopic('lab/b', 'lab/b/robots/arm-2/other'), null);
  assert.equal(parseRobotTopic('lab/b', 'lab/b/robots/arm/2/state'), null);
  assert.equal(parseRobotTopic('lab/b', 'lab/c/robots/arm/state'), null);
});

test('topic bases: levels without wildcards, no $ prefix', () => {
  assert.equal(checkBase('brainstem'), null);
  assert.equal(checkBase('site/cell-3'), null);
  for (const bad of ['', '/x', 'x/', 'a//b', 'a/+/b', 'a/#', '$SYS'])
    assert.match(checkBase(bad) ?? '', /topic base must/, bad);
});

test('QoS 1 for commands, events, identity; QoS 0 for state and heartbeat; only identity retained', () => {
  for (const t of [
    'trajectory',
    'gripper',
    'stop',
    'events',
    'description',
    'availability',
    'daemon_availability',
  ] as const)
    assert.equal(DELIVERY[t].qos, 1, t);
  for (const t of ['state', 'heartbeat'] as const) assert.equal(DELIVERY[t].qos, 0, t);
  const retained = Object.entries(DELIVERY)
    .filter(([, d]) => d.retain)
    .map(([k]) => k)
    .sort();
  assert.deepEqual(retained, ['availability', 'daemon_availability', 'description']);
});

test('MQTT 5 properties: correlation data is the id, expiry rounds up to whole seconds (≥ 1)', () => {
  const p = mqtt5Properties('t-7', 2.2);
  assert.deepEqual(p.correlationData, Buffer.from('t-7'));
  assert.equal(p.messageExpiryInterval, 3);
  assert.equal(mqtt5Properties('x', 0.01).messageExpiryInterval, 1);
  assert.equal(mqtt5Properties(null).correlationData, undefined);
  assert.equal(mqtt5Properties(null).contentType, 'application/json');
});
