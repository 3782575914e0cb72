import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StopStringMatcher } from '../../../daemon/engine/stop-strings.js';

function run(stops: string[], chunks: string[]): { text: string; stop?: string; perChunk: string[] } {
  const m = new StopStringMatcher(stops);
  const perChunk: string[] = [];
  let stop: string | undefined;
  for (const c of chunks) {
    const r = m.push(c);
    perChunk.push(r.text);
    if (r.stop !== undefined) {
      stop = r.stop;
      break;
    }
  }
  const tail = m.flush();
  return { text: perChunk.join('') + tail, stop, perChunk };
}

test('a stop string split across chunks ends the output before it, at every boundary', () => {
  const text = 'The answer is 42.\nUser: next';
  for (let i = 0; i <= text.length; i++) {
    for (let j = i; j <= text.length; j++) {
      const chunks = [text.slice(0, i), text.slice(i, j), text.slice(j)];
      const r = run(['\nUser:'], chunks);
      assert.equal(r.text, 'The answer is 42.', JSON.stringify(chunks));
      assert.equal(r.stop, '\nUser:');
    }
  }
});

test('text that could start a stop string is held back, then released when it cannot', () => {
  const r = run(['STOP'], ['abc ST', 'O', 'P?']);
  assert.deepEqual(r.perChunk, ['abc ', '', '']);
  assert.equal(r.stop, 'STOP');
  const q = run(['STOP'], ['abc ST', 'Oy', ' end']);
  assert.deepEqual(q.perChunk, ['abc ', 'STOy', ' end']);
  assert.equal(q.stop, undefined);
  assert.equal(run(['STOP'], ['tail ST']).text, 'tail ST', 'held text is flushed at the end');
});

test('the earliest of several (overlapping) stop strings wins', () => {
  assert.deepEqual(run(['bc', 'abcd'], ['xab', 'cd']), { text: 'x', stop: 'abcd', perChunk: ['x', ''] });
  assert.deepEqual(run(['bc', 'abcd'], ['xb', 'cd']), { text: 'x', stop: 'bc', perChunk: ['x', ''] });
  assert.deepEqual(run(['aab'], ['aaa', 'ab']).text, 'aa');
  assert.equal(run([], ['free ', 'text']).text, 'free text');
});
