import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diskReadBytes, memoryStats, parseProcStatus } from '../../../daemon/util/proc-stats.js';

const STATUS = `Name:\tnode
VmHWM:\t  204800 kB
VmRSS:\t  102400 kB
RssAnon:\t   40960 kB
RssFile:\t   61440 kB
Threads:\t7
`;

test('status lines in kB become bytes; other lines are ignored', () => {
  const s = parseProcStatus(STATUS);
  assert.equal(s.get('RssAnon'), 40960 * 1024);
  assert.equal(s.has('Threads'), false);
  assert.deepEqual(memoryStats(STATUS), {
    rssAnonBytes: 40960 * 1024,
    rssFileBytes: 61440 * 1024,
    peakRssBytes: 204800 * 1024,
    rssBytes: 102400 * 1024,
  });
});

test('without /proc the counters are null and RSS comes from Node', () => {
  const m = memoryStats(null);
  assert.equal(m.rssAnonBytes, null);
  assert.equal(m.peakRssBytes, null);
  assert.ok(m.rssBytes > 0);
  assert.equal(diskReadBytes(null), null);
  assert.equal(diskReadBytes('rchar: 5\nread_bytes: 12288\nwrite_bytes: 0\n'), 12288);
});
