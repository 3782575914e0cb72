import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseActionLog } from '../../../daemon/policy/context/action-log.js';
import { compileContext } from '../../../daemon/policy/context/compile.js';
import { naturalCompare } from '../../../daemon/policy/context/frames.js';
import { checkContextInput } from '../../../daemon/policy/context/input.js';
import { ContextInputError } from '../../../daemon/policy/context/types.js';
import { tempDir } from '../../helpers/temp.js';
import { writeGreyFrames } from './context-fixtures.js';

const jsonl = (text: string) => () => parseActionLog(text, 'a.jsonl', 'jsonl', 'context.demonstrations[0].actions');
const csv = (text: string) => () => parseActionLog(text, 'a.csv', 'csv', 'context.demonstrations[0].actions');

test('malformed action log lines name the file, the line and the field', () => {
  assert.throws(
    jsonl('{"t":0}\n\n{"t":"x"}\n'),
    /^ContextInputError: a\.jsonl:3: field "t": expected a number, got "x"$/,
  );
  assert.throws(jsonl('{"t":0}\n{"t":'), /a\.jsonl:2: line: not JSON/);
  assert.throws(jsonl('[1]'), /a\.jsonl:1: line: expected a JSON object/);
  assert.throws(jsonl('{"t":0,"grip":1}'), /a\.jsonl:1: field "grip": unknown field/);
  assert.throws(jsonl('{"arm":"l"}'), /a\.jsonl:1: field "t": missing/);
  assert.throws(jsonl('{"t":0,"joints":[0,null]}'), /a\.jsonl:1: field "joints\.1": expected a number, got null/);
  assert.throws(jsonl('{"t":0,"tcp":[0,0,0]}'), /a\.jsonl:1: field "tcp": expected 7 numbers/);
  assert.throws(jsonl('{"t":0,"gripper_cmd":2}'), /a\.jsonl:1: field "gripper_cmd": 2 is outside \[0, 1\]/);
  assert.throws(jsonl('{"t":0,"arm":""}'), /a\.jsonl:1: field "arm": expected an arm name/);
  assert.throws(jsonl('{"t":1}\n{"t":0.5}'), /a\.jsonl:2: field "t": 0\.5 is earlier than 1 on line 1/);
  assert.throws(
    csv('t,joints.0,joints.1\n0,1,2\n0.1,1,abc\n'),
    /a\.csv:3: field "joints\.1": expected a number, got "abc"/,
  );
  assert.throws(csv('t,joints.0,joints.1\n0,1,\n'), /a\.csv:2: field "joints\.1": expected a number, got nothing/);
  assert.throws(csv('t,speed\n'), /a\.csv:1: column "speed": unknown column/);
  assert.throws(csv('t,joints.1\n'), /a\.csv:1: column "joints\.0": missing/);
  assert.throws(csv('arm\n'), /a\.csv:1: column "t": missing/);
  assert.throws(csv('t,arm\n0,l,extra\n'), /a\.csv:2: row: 3 cells, the header has 2/);
  assert.throws(csv('\n\n'), /a\.csv:1: header: the CSV has no header row/);
  const err = (() => {
    try {
      csv('t\n0\nx\n')();
    } catch (e) {
      return e as ContextInputError;
    }
  })()!;
  assert.ok(err instanceof ContextInputError);
  assert.deepEqual([err.field, err.file, err.line], ['context.demonstrations[0].actions', 'a.csv', 3]);
});

test('a CSV row: empty cells are missing, a vector given in no cell is absent, names stay text', () => {
  const rows = csv('t,arm,joints.0,joints.1,gripper_cmd,segment\n0,left,,,1,7\n0.5,right,1e-1,-2,,a\n')();
  assert.deepEqual(rows, [
    { line: 2, t: 0, arm: 'left', gripperCmd: 1, segment: '7' },
    { line: 3, t: 0.5, arm: 'right', joints: [0.1, -2], segment: 'a' },
  ]);
});

test('missing folder, empty folder, corrupt frame, bad sidecar, bad log path: errors name the field and the file', async (t) => {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const missing = join(tmp.path, 'nope');
  const video = (source: Record<string, unknown>) => ({
    demonstrations: [{ name: 'd', videos: [{ camera: 'c', source }] }],
  });
  await assert.rejects(
    compileContext(video({ kind: 'frames', dir: missing, fps: 5 })),
    (e: ContextInputError) =>
      e.message === `context.demonstrations[0].videos[0].source.dir: frame folder ${missing} does not exist` &&
      e.field === 'context.demonstrations[0].videos[0].source.dir',
  );
  await assert.rejects(compileContext(video({ kind: 'frames', dir: tmp.path, fps: 5 })), /has no PNG or JPEG frames/);
  const dir = await writeGreyFrames(join(tmp.path, 'f'), [10, 20, 30]);
  const bad = join(dir, 'frame_001.png');
  writeFileSync(bad, 'not a png');
  await assert.rejects(
    compileContext(video({ kind: 'frames', dir, fps: 5 })),
    (e: ContextInputError) =>
      e.file === bad && e.message.startsWith(`context.demonstrations[0].videos[0]: cannot decode image ${bad}`),
  );
  const ok = await writeGreyFrames(join(tmp.path, 'g'), [10, 20, 30]);
  const stamps = join(tmp.path, 't.json');
  writeFileSync(stamps, '[0, 1]');
  await assert.rejects(
    compileContext(video({ kind: 'frames', dir: ok, timestamps: stamps })),
    new RegExp(`source\\.timestamps: ${stamps}: 2 times for 3 frames`),
  );
  writeFileSync(stamps, '[0, 1, 1]');
  await assert.rejects(
    compileContext(video({ kind: 'frames', dir: ok, timestamps: stamps })),
    /entry 2: 1 is not after 1/,
  );
  await assert.rejects(
    compileContext(video({ kind: 'frames', dir: ok, fps: 5 }), { maxFrames: 2 }),
    /more than 2 frames/,
  );
  const log = join(tmp.path, 'a.txt');
  await assert.rejects(
    compileContext({
      demonstrations: [
        { name: 'd', videos: [{ camera: 'c', source: { kind: 'frames', dir: ok, fps: 5 } }], actions: log },
      ],
    }),
    /context\.demonstrations\[0\]\.actions: action log .*a\.txt must end in \.jsonl or \.csv/,
  );
  await assert.rejects(
    compileContext({ goals: [{ path: join(tmp.path, 'goal.png') }] }),
    /context\.goals\[0\]\.path: cannot decode image/,
  );
});

test('input shape: unknown fields, bad names, fps and timestamps both or neither, repeated names', () => {
  const v = (source: unknown) => ({ demonstrations: [{ name: 'd', videos: [{ camera: 'c', source }] }] });
  assert.throws(() => checkContextInput({ goal: [] }), /context\.goal: unknown field \(known: goals, demonstrations\)/);
  assert.throws(
    () => checkContextInput({ goals: [{}] }),
    /context\.goals\[0\]\.path: expected a file path, got nothing/,
  );
  assert.throws(
    () => checkContextInput(v({ kind: 'frames', dir: 'x' })),
    /videos\[0\]\.source: expected exactly one of fps and timestamps/,
  );
  assert.throws(
    () => checkContextInput(v({ kind: 'frames', dir: 'x', fps: 0 })),
    /source\.fps: expected a frame rate in \[0\.001, 1000\], got 0/,
  );
  assert.throws(
    () => checkContextInput(v({ kind: 'video', path: 'x', timestamps: 't' })),
    /source\.timestamps: unknown field/,
  );
  assert.throws(
    () => checkContextInput(v({ kind: 'gif', path: 'x' })),
    /source\.kind: expected 'frames' or 'video', got "gif"/,
  );
  assert.throws(
    () => checkContextInput({ demonstrations: [{ name: 'a b', videos: [] }] }),
    /demonstrations\[0\]\.name: expected a name/,
  );
  assert.throws(
    () => checkContextInput({ demonstrations: [{ name: 'a', videos: [] }] }),
    /videos: expected an array of at least 1/,
  );
  const twice = { name: 'a', videos: [{ camera: 'c', source: { kind: 'video', path: 'x' } }] };
  assert.throws(
    () => checkContextInput({ demonstrations: [twice, twice] }),
    /demonstrations\[1\]\.name: expected a name not used/,
  );
  assert.throws(
    () => checkContextInput({ demonstrations: [{ ...twice, videos: [twice.videos[0], twice.videos[0]] }] }),
    /videos: expected one video per camera, got "c"/,
  );
  assert.deepEqual(checkContextInput(v({ kind: 'video', path: 'x.mp4' })), {
    demonstrations: [{ name: 'd', videos: [{ camera: 'c', source: { kind: 'video', path: 'x.mp4' } }] }],
  });
});

test('paths pass through resolvePath, which may refuse them', async () => {
  const seen: string[] = [];
  await assert.rejects(
    compileContext(
      { goals: [{ path: '/etc/x.png' }] },
      {
        resolvePath: async (p, field) => {
          seen.push(`${field}=${p}`);
          throw new Error('outside the allowed roots');
        },
      },
    ),
    /outside the allowed roots/,
  );
  assert.deepEqual(seen, ['context.goals[0].path=/etc/x.png']);
});

test('frame names sort with numbers as numbers', () => {
  assert.deepEqual(['f10.png', 'f2.png', 'f1.png', 'e9.png', 'f02.png'].sort(naturalCompare), [
    'e9.png',
    'f1.png',
    'f02.png',
    'f2.png',
    'f10.png',
  ]);
});
