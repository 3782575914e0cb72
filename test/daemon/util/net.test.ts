import { test } from 'node:test';
import assert from 'node:assert/strict';
import { dialHost, withTimeout } from '../../../daemon/util/net.js';

test('dialHost maps wildcard binds to loopback and brackets IPv6', () => {
  assert.equal(dialHost('0.0.0.0'), '127.0.0.1');
  assert.equal(dialHost('::'), '127.0.0.1');
  assert.equal(dialHost('::1'), '[::1]');
  assert.equal(dialHost('127.0.0.1'), '127.0.0.1');
  assert.equal(dialHost('robot.local'), 'robot.local');
});

test('withTimeout passes results and errors through and names what it waited for', async () => {
  assert.equal(await withTimeout(Promise.resolve(3), 1000, 'x'), 3);
  await assert.rejects(withTimeout(Promise.reject(new Error('boom')), 1000, 'x'), /boom/);
  await assert.rejects(
    withTimeout(new Promise(() => undefined), 1, 'the moon'),
    /timed out after 1 ms waiting for the moon/,
  );
});
