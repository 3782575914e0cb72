import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileContext } from '../../../daemon/policy/context/compile.js';
import { findOnPath } from '../../../daemon/policy/context/ffmpeg.js';
import { tempDir } from '../../helpers/temp.js';
import { demoActions, demoLevels, writeGreyFrames, writeJsonl } from './context-fixtures.js';

// A stand-in ffmpeg: records its arguments, then copies the PNGs of its frames/ folder to the
// output pattern, or fails like ffmpeg on an input whose content is "bad".
function stubFfmpeg(bin: string): void {
  const script = `#!${process.execPath}
const fs = require('node:fs'), path = require('node:path');
const args = process.argv.slice(2);
fs.writeFileSync(path.join(__dirname, 'argv.json'), JSON.stringify(args));
const input = args[args.indexOf('-i') + 1];
if (fs.readFileSync(input, 'utf8') === 'bad') { process.stderr.write(input + ': Invalid data found when processing input\\n'); process.exit(1); }
const out = args[args.length - 1];
const frames = fs.readdirSync(path.join(__dirname, 'frames')).sort();
frames.forEach((f, i) => fs.copyFileSync(path.join(__dirname, 'frames', f), out.replace('%06d.jpg', String(i).padStart(6, '0') + '.png')));
`;
  writeFileSync(join(bin, 'ffmpeg'), script);
  chmodSync(join(bin, 'ffmpeg'), 0o755);
}

const videoInput = (path: string, actions?: string) => ({
  demonstrations: [
    { name: 'pick', videos: [{ camera: 'top', source: { kind: 'video', path } }], ...(actions ? { actions } : {}) },
  ],
});

test('a video file without ffmpeg on PATH: the error names the file and says ffmpeg is needed', async (t) => {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const file = join(tmp.path, 'demo.mp4');
  writeFileSync(file, 'x');
  await assert.rejects(
    compileContext(videoInput(file), { pathEnv: join(tmp.path, 'empty') }),
    new RegExp(
      `^ContextInputError: context\\.demonstrations\\[0\\]\\.videos\\[0\\]\\.source\\.path: ${file} is a video file and decoding it needs ffmpeg, which is not on PATH`,
    ),
  );
  await assert.rejects(
    compileContext(videoInput(join(tmp.path, 'missing.mp4'))),
    /video file .*missing\.mp4 cannot be read/,
  );
});

test('a video file is decoded by ffmpeg at the configured rate into a temporary folder, removed afterwards', async (t) => {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const bin = join(tmp.path, 'bin');
  mkdirSync(bin);
  stubFfmpeg(bin);
  await writeGreyFrames(join(bin, 'frames'), demoLevels());
  const file = join(tmp.path, 'demo.mkv');
  writeFileSync(file, 'video');
  const actions = writeJsonl(join(tmp.path, 'a.jsonl'), demoActions());
  const { report } = await compileContext(videoInput(file, actions), { pathEnv: bin, maxFrames: 100 });
  assert.deepEqual(report.videos[0]!.keyframes, [0, 15, 27, 38, 59]);
  assert.equal(report.actions[0]!.kept, 12);
  const argv = JSON.parse(readFileSync(join(bin, 'argv.json'), 'utf8')) as string[];
  const out = argv[argv.length - 1]!;
  assert.deepEqual(argv.slice(0, -1), [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'error',
    '-i',
    file,
    '-vf',
    "fps=10,scale=w='min(iw,768)':h='min(ih,768)':force_original_aspect_ratio=decrease:force_divisible_by=2",
    '-frames:v',
    '101',
    '-q:v',
    '2',
    '-start_number',
    '0',
  ]);
  assert.match(out, /brainstem-frames-.*\/f%06d\.jpg$/);
  assert.equal(existsSync(join(out, '..')), false);
  writeFileSync(file, 'bad');
  await assert.rejects(
    compileContext(videoInput(file), { pathEnv: bin }),
    new RegExp(`source\\.path: ffmpeg could not decode ${file}: ${file}: Invalid data found when processing input$`),
  );
  await assert.rejects(compileContext(videoInput(file.replace('demo', 'none')), { pathEnv: bin }), /cannot be read/);
  assert.equal(findOnPath('ffmpeg', `${join(tmp.path, 'nothing')}:${bin}`), join(bin, 'ffmpeg'));
});

const realFfmpeg = findOnPath('ffmpeg', process.env.PATH);

test('a real ffmpeg decodes an encoded video, scaled into the image box, to the same keyframes', {
  skip: realFfmpeg ? false : 'ffmpeg is not on PATH',
}, async (t) => {
  const tmp = tempDir();
  t.after(() => tmp.remove());
  const dir = await writeGreyFrames(join(tmp.path, 'frames'), demoLevels());
  const file = join(tmp.path, 'demo.mkv');
  const encode = ['-hide_banner', '-loglevel', 'error', '-framerate', '10', '-i', join(dir, 'frame_%03d.png')];
  execFileSync(realFfmpeg!, [...encode, '-c:v', 'ffv1', '-pix_fmt', 'bgr0', file]);
  const actions = writeJsonl(join(tmp.path, 'a.jsonl'), demoActions());
  const { parts, report } = await compileContext(videoInput(file, actions), { imageMaxSide: 32 });
  // ffmpeg itself scales the 64×48 frames into the 32 px box.
  assert.ok(parts.every((p) => p.type === 'text' || (p.width === 32 && p.height === 24)));
  assert.deepEqual(report.videos, [
    { demo: 'pick', camera: 'top', frames: 60, candidates: [15, 27, 38, 52], keyframes: [0, 15, 27, 38, 59] },
  ]);
  assert.deepEqual(report.actions[0], {
    demo: 'pick',
    file: actions,
    samples: 62,
    aligned: 60,
    unaligned: 2,
    kept: 12,
    thinned: 48,
  });
});
