import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { compileContext } from '../../../daemon/policy/context/compile.js';
import { referenceContent } from '../../../daemon/policy/context/parts.js';
import { toOpenAiMessages } from '../../../daemon/policy/providers/openai-format.js';
import type { ContextPart, ImagePart } from '../../../daemon/policy/context/types.js';
import { tempDir } from '../../helpers/temp.js';
import { demoActions, demoLevels, writeCsv, writeGreyFrames, writeJsonl } from './context-fixtures.js';

async function demo(t: { after(fn: () => void): void }, log: 'jsonl' | 'csv' = 'jsonl') {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const dir = await writeGreyFrames(join(tmp.path, 'top'), demoLevels());
  const actions =
    log === 'jsonl'
      ? writeJsonl(join(tmp.path, 'a.jsonl'), demoActions())
      : writeCsv(join(tmp.path, 'a.csv'), demoActions());
  const goal = join(tmp.path, 'goal.png');
  await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#336699' } })
    .png()
    .toFile(goal);
  const video = { camera: 'top', source: { kind: 'frames', dir, fps: 10 } };
  return { tmp: tmp.path, dir, actions, goal, video };
}

const texts = (parts: ContextPart[]) => parts.flatMap((p) => (p.type === 'text' ? [JSON.parse(p.text)] : []));

test('a generated video with known scene changes: keyframes, events, aligned and thinned samples, interleaved parts', async (t) => {
  const d = await demo(t);
  const { parts, report } = await compileContext({
    demonstrations: [{ name: 'pick', videos: [d.video], actions: d.actions }],
  });
  // Windows [0,2) [1,3) [2,4) [3,5) [4,6) [5,7) s pick 15, 27, 38, 38, 52, 52; 52 (grey 43) is a near-duplicate of 59 (45).
  assert.deepEqual(report.videos, [
    { demo: 'pick', camera: 'top', frames: 60, candidates: [15, 27, 38, 52], keyframes: [0, 15, 27, 38, 59] },
  ]);
  assert.deepEqual(
    report.events.map((e) => [e.kind, e.t, e.arm, e.line]),
    [
      ['contact', 1.5, 'left', 16],
      ['release', 3.8, 'left', 39],
    ],
  );
  // 62 samples: 6.3 and 6.4 s unaligned; kept: 0 1 2 s of "reach", 3 4 5 s of "place", endpoints 0 2.9 3 5.9,
  // both sides of the commands at 1.5 and 3.8 s.
  assert.deepEqual(report.actions, [
    { demo: 'pick', file: d.actions, samples: 62, aligned: 60, unaligned: 2, kept: 12, thinned: 48 },
  ]);
  assert.deepEqual(
    report.dropped.map((x) => [x.what, x.reason, x.index ?? x.line, x.detail]),
    [
      ['frame', 'near_duplicate', 52, 'near-duplicate of frame 59 (distance 0.0078)'],
      ['sample', 'unaligned', 61, 'arm left'],
      ['sample', 'unaligned', 62, 'arm left'],
    ],
  );
  assert.deepEqual(
    parts.map((p) => (p.type === 'image' ? p.id : JSON.parse(p.text).ref)),
    [
      'demonstration',
      'keyframe',
      'pick/top/0',
      'actions',
      'keyframe',
      'pick/top/15',
      'actions',
      'keyframe',
      'pick/top/27',
      'actions',
    ].concat(['keyframe', 'pick/top/38', 'actions', 'keyframe', 'pick/top/59', 'actions']),
  );
  const records = texts(parts);
  assert.deepEqual(
    records.filter((r) => r.ref === 'keyframe').map((r) => [r.frame, r.t_s, r.stage]),
    [
      [0, 0, 'start'],
      [15, 1.5, 'contact'],
      [27, 2.7, 'carry'],
      [38, 3.8, 'release'],
      [59, 5.9, 'end'],
    ],
  );
  assert.deepEqual(
    records.filter((r) => r.ref === 'actions').map((r) => r.rows.map((row: unknown[]) => row[0])),
    [[0, 1, 1.4], [1.5, 2], [2.9, 3, 3.7], [3.8, 4, 5], [5.9]],
  );
  const contact = records.find((r) => r.frame === 15);
  assert.deepEqual(contact.state, {
    left: { joints: [0.15, 0.5, -0.25], tcp: [0.3, 0, 0.2, 0, 0, 0, 1], gripper: 0.2 },
  });
  assert.deepEqual(contact.action, { left: { gripper_cmd: 0, joint_cmd: [0.16, 0.5, -0.25] } });
  assert.deepEqual(records[0].action_columns, ['t_s', 'arm', 'joints', 'tcp', 'gripper', 'gripper_cmd', 'joint_cmd']);
  assert.equal(records[0].duration_s, 5.9);
  const image = parts.find((p): p is ImagePart => p.type === 'image')!;
  assert.equal(image.mime, 'image/jpeg');
  assert.deepEqual((await sharp(image.bytes).metadata()).format, 'jpeg');
});

test('a CSV log gives the same context as the JSONL one', async (t) => {
  const a = await demo(t, 'jsonl');
  const b = await demo(t, 'csv');
  const run = async (x: typeof a) =>
    compileContext({ demonstrations: [{ name: 'pick', videos: [x.video], actions: x.actions }] });
  const [ra, rb] = [await run(a), await run(b)];
  assert.deepEqual(texts(ra.parts), texts(rb.parts));
  // Lines differ by the CSV's header row.
  const noLines = (r: unknown) =>
    JSON.parse(JSON.stringify(r, (k, v) => (k === 'line' || k === 'file' ? undefined : v)));
  assert.deepEqual(noLines(ra.report), noLines(rb.report));
  assert.deepEqual(
    rb.report.events.map((e) => e.line),
    [17, 40],
  );
});

test('same input, same output: parts (bytes included) and report', async (t) => {
  const d = await demo(t);
  const input = {
    goals: [{ path: d.goal }],
    demonstrations: [{ name: 'pick', videos: [d.video], actions: d.actions }],
  };
  assert.deepEqual(await compileContext(input), await compileContext(input));
});

test('goal images come first, resized to the longest side; sizes capped at 1280', async (t) => {
  const d = await demo(t);
  const { parts } = await compileContext({ goals: [{ path: d.goal, label: 'bowl full' }] }, { imageMaxSide: 640 });
  assert.deepEqual(texts(parts), [
    { ref: 'goals', count: 1, note: 'goal images: how the scene should look when the task is done' },
    { ref: 'goal', id: 'goal/1', label: 'bowl full' },
  ]);
  const img = parts[2] as ImagePart;
  assert.deepEqual([img.id, img.width, img.height], ['goal/1', 640, 320]);
  await assert.rejects(
    compileContext({}, { imageMaxSide: 2000 }),
    /options\.imageMaxSide: expected an integer in \[16, 1280\], got 2000/,
  );
});

test('per-video cap keeps first, last, events, then the largest changes', async (t) => {
  const d = await demo(t);
  const { report } = await compileContext(
    { demonstrations: [{ name: 'pick', videos: [d.video], actions: d.actions }] },
    { maxKeyframesPerVideo: 3 },
  );
  assert.deepEqual(report.videos[0]!.keyframes, [0, 15, 59]);
  assert.deepEqual(
    report.dropped.filter((x) => x.what === 'frame').map((x) => [x.index, x.reason]),
    [
      [38, 'cap_per_video'],
      [52, 'near_duplicate'],
      [27, 'cap_per_video'],
    ],
  );
});

test('total cap: goals first, then keyframes by rank across videos (first and last of each before any third)', async (t) => {
  const d = await demo(t);
  const wrist = { camera: 'wrist', source: d.video.source };
  const { parts, report } = await compileContext(
    { goals: [{ path: d.goal }], demonstrations: [{ name: 'pick', videos: [d.video, wrist], actions: d.actions }] },
    { maxImages: 7 },
  );
  assert.equal(report.images, 7);
  assert.deepEqual(
    report.videos.map((v) => [v.camera, v.keyframes]),
    [
      ['top', [0, 15, 59]],
      ['wrist', [0, 15, 59]],
    ],
  );
  assert.deepEqual(
    report.dropped.filter((x) => x.reason === 'cap_total').map((x) => [x.ref, x.index]),
    [
      ['pick/top', 38],
      ['pick/wrist', 38],
      ['pick/top', 27],
      ['pick/wrist', 27],
    ],
  );
  // Both views of one moment sit together, the timeline camera first.
  const ids = parts.flatMap((p) => (p.type === 'image' ? [p.id] : []));
  assert.deepEqual(ids, [
    'goal/1',
    'pick/top/0',
    'pick/wrist/0',
    'pick/top/15',
    'pick/wrist/15',
    'pick/top/59',
    'pick/wrist/59',
  ]);
  const goalsOnly = await compileContext(
    { goals: [{ path: d.goal }, { path: d.goal }, { path: d.goal }] },
    { maxImages: 2 },
  );
  assert.deepEqual(goalsOnly.report.dropped, [
    { what: 'goal', ref: 'goal/3', reason: 'cap_total', index: 2, detail: 'beyond 2 images' },
  ]);
});

test('frame times from a timestamps sidecar; events with no frame near them are reported', async (t) => {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const dir = await writeGreyFrames(join(tmp.path, 'f'), [10, 10, 200, 120]);
  const stamps = join(tmp.path, 'times.json');
  writeFileSync(stamps, JSON.stringify([0, 0.5, 1, 3]));
  const log = writeJsonl(join(tmp.path, 'a.jsonl'), [
    { t: 0, gripper_cmd: 1 },
    { t: 2, gripper_cmd: 0 },
  ]);
  const { report } = await compileContext({
    demonstrations: [
      { name: 'd', videos: [{ camera: 'c', source: { kind: 'frames', dir, timestamps: stamps } }], actions: log },
    ],
  });
  assert.deepEqual(report.videos[0]!.keyframes, [0, 2, 3]);
  assert.deepEqual(
    report.dropped.map((x) => [x.what, x.reason, x.line, x.detail]),
    [
      ['event', 'unaligned', 2, 'contact of arm'],
      ['sample', 'unaligned', 2, 'arm arm'],
    ],
  );
});

test('as provider content: texts as they are, images as {mime, bytes} with a label, sent as data URLs', async (t) => {
  const d = await demo(t);
  const { parts } = await compileContext({
    goals: [{ path: d.goal, label: 'bowl full' }],
    demonstrations: [{ name: 'pick', videos: [d.video], actions: d.actions }],
  });
  const content = referenceContent(parts);
  assert.equal(content.length, parts.length);
  const labels = content.flatMap((c) => (c.type === 'image' ? [c.label] : []));
  assert.deepEqual(labels, [
    'goal image 1: bowl full',
    'demonstration pick, camera top, t=0.00 s, start',
    'demonstration pick, camera top, t=1.50 s, contact',
    'demonstration pick, camera top, t=2.70 s, carry',
    'demonstration pick, camera top, t=3.80 s, release',
    'demonstration pick, camera top, t=5.90 s, end',
  ]);
  const [user] = toOpenAiMessages([{ role: 'user', content }], { images: 'url' });
  const sent = user!.content as { type: string; text?: string; image_url?: { url: string } }[];
  const image = parts[2] as ImagePart;
  assert.deepEqual(sent[2], {
    type: 'image_url',
    image_url: { url: `data:image/jpeg;base64,${image.bytes.toString('base64')}` },
  });
  assert.deepEqual(sent[0], { type: 'text', text: (parts[0] as { text: string }).text });
});
