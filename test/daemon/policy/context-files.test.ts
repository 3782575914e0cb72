// policy.start's context by file path, compiled in the daemon: paths are read only inside the
// context roots (<data_dir>/context, where relative paths start, and policy.context_roots), as
// regular files or folders of them, symlinks resolved; every refusal names the field and the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileContextFiles, contextBase, contextRoots } from '../../../daemon/policy/episode/context-files.js';
import { ContextInputError } from '../../../daemon/policy/context/types.js';
import { solidImage } from '../../helpers/images.js';
import { tempDir } from '../../helpers/temp.js';

test('context files: inside the roots compiled; outside, through a symlink, a FIFO or missing refused by field', async (t) => {
  const data = tempDir('bs-context-data-');
  const extra = tempDir('bs-context-extra-');
  const away = tempDir('bs-context-away-');
  t.after(() => [data, extra, away].forEach((d) => d.remove()));
  const base = contextBase(data.path);
  mkdirSync(join(base, 'frames'), { recursive: true });
  const png = await solidImage('png', 32, 24);
  writeFileSync(join(base, 'goal.png'), png);
  writeFileSync(join(extra.path, 'goal2.png'), png);
  writeFileSync(join(away.path, 'secret.png'), png);
  symlinkSync(join(away.path, 'secret.png'), join(base, 'link.png'));
  execFileSync('mkfifo', [join(base, 'pipe.png')]);
  const roots = contextRoots([extra.path], data.path);
  const compile = (goals: object[]) => compileContextFiles({ goals }, roots, base);

  const ok = await compile([{ path: 'goal.png', label: 'the goal' }, { path: join(extra.path, 'goal2.png') }]);
  assert.equal(ok.report.images, 2);
  assert.deepEqual(
    ok.parts.filter((p) => p.type === 'image').map((p) => p.label),
    ['goal image 1: the goal', 'goal image 2: goal2.png'],
  );

  const refused = async (goals: object[], field: string, message: RegExp) =>
    assert.rejects(compile(goals), (e: unknown) => {
      assert.ok(e instanceof ContextInputError, String(e));
      assert.equal(e.field, field);
      assert.match(e.message, message);
      return true;
    });
  const where = `\\(${base}, ${extra.path}\\); add a folder to policy\\.context_roots to allow it`;
  await refused(
    [{ path: 'goal.png' }, { path: join(away.path, 'secret.png') }],
    'context.goals[1].path',
    new RegExp(
      `^context\\.goals\\[1\\]\\.path: context path ${away.path}/secret\\.png leads outside the context roots ${where}$`,
    ),
  );
  await refused(
    [{ path: 'link.png' }],
    'context.goals[0].path',
    new RegExp(`context path ${base}/link\\.png leads through a symlink outside the context roots`),
  );
  await refused(
    [{ path: 'pipe.png' }],
    'context.goals[0].path',
    new RegExp(`^context\\.goals\\[0\\]\\.path: context file ${base}/pipe\\.png is a FIFO, not a regular file$`),
  );
  await refused([{ path: 'nope.png' }], 'context.goals[0].path', /context path .*nope\.png does not exist/);
  await refused([{ path: '../escape.png' }], 'context.goals[0].path', /leads outside the context roots/);

  // A frame folder: a folder (not a file) whose entries are regular files.
  const demo = (dir: string) => ({
    demonstrations: [{ name: 'pick', videos: [{ camera: 'top', source: { kind: 'frames', dir, fps: 10 } }] }],
  });
  const field = 'context.demonstrations[0].videos[0].source.dir';
  await assert.rejects(compileContextFiles(demo('goal.png'), roots, base), (e: unknown) => {
    assert.ok(e instanceof ContextInputError && e.field === field, String(e));
    assert.match(e.message, /context path .*goal\.png is a file, not a frame folder/);
    return true;
  });
  execFileSync('mkfifo', [join(base, 'frames', 'f1.png')]);
  await assert.rejects(compileContextFiles(demo('frames'), roots, base), (e: unknown) => {
    assert.ok(e instanceof ContextInputError && e.field === field, String(e));
    assert.match(e.message, /context file .*frames\/f1\.png is a FIFO, not a regular file/);
    return true;
  });
});
