// The console's panels in headless Chromium on a daemon serving arm1 (yam) and duo (dual-yam)
// without controllers: camera frames are put in the daemon's camera store and joint states given
// to the 3-D view directly, so every expectation is computed, not timed. Camera frusta on a link
// (`link`, `arm/link`, or a simulated scene's mount) follow the link; one in the world follows its
// latest metadata.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import sharp from 'sharp';
import { getChromium } from '../../helpers/browser.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { logIn, openConsole, pageValue } from './page.js';
import type { CameraMeta } from '../../../robot/link/camera-protocol.js';
import { loadArms } from '../../../robot/description/loader.js';
import { RobotModel } from '../../../robot/tools/robot-model.js';
import { robotFrames } from '../../../daemon/policy/episode/robot-frames.js';
import { fromPose } from '../../../robot/math/quaternion.js';
import { compose, type Transform } from '../../../robot/math/transform.js';
import { loadScene } from '../../../robot/sim/scene/scene-config.js';

const HOME = [0, 0, 0, 0, 0, 0];
const BENT = [0.6, 0.9, 0.7, -0.4, 0.5, 0.3];

/** Where frame `frame` of setup `name` puts the optical pose (7 numbers or a 12-number transform). */
function expected(name: string, q: Record<string, number[]>, frame: string, pose: number[]) {
  const arms = loadArms(name);
  assert.ok(arms.ok);
  const t = robotFrames(new RobotModel(arms.value.setup), (arm) => q[arm]).toolFrom(frame);
  assert.ok(typeof t !== 'string', String(t));
  const local: Transform =
    pose.length === 12 ? Float64Array.from(pose) : fromPose(pose.slice(0, 3), Float64Array.from(pose.slice(3)));
  const m = compose(new Float64Array(12), t as Transform, local);
  return { apex: [m[3]!, m[7]!, m[11]!], axis: [m[2]!, m[6]!, m[10]!] };
}

/** A page expression: the shown frustum's apex and viewing axis (+z) in the robot's frame, or null. */
const shownFrustum = (robot: string, camera: string) => `(() => {
  const r = brainstemConsole.view.robots.get(${JSON.stringify(robot)});
  const f = r?.frusta.get(${JSON.stringify(camera)});
  if (!f) return null;
  r.group.updateWorldMatrix(true, true);
  const e = f.matrixWorld.elements;
  const g = r.group.position;
  return { apex: [e[12] - g.x, e[13] - g.y, e[14] - g.z], axis: [e[8], e[9], e[10]] };
})()`;

test('console panels on a daemon serving arm1 (yam) and duo (dual-yam) without controllers', async (t) => {
  const browser = await getChromium(t);
  if (!browser) return;
  const d = await startTestDaemon({
    robots: {
      serve: [
        { id: 'arm1', robot: 'yam', transport: 'mqtt' },
        { id: 'duo', robot: 'dual-yam', transport: 'mqtt' },
      ],
    },
  });
  t.after(() => d.stop());
  const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#468' } })
    .jpeg()
    .toBuffer();
  const seqs = new Map<string, number>();
  /** A colour frame of `camera` with the given extrinsics, as a controller would send it. */
  const frame = (robot: string, camera: string, extrinsics: CameraMeta['extrinsics']) => {
    const seq = (seqs.get(`${robot}/${camera}`) ?? -1) + 1;
    seqs.set(`${robot}/${camera}`, seq);
    const meta: CameraMeta = {
      v: 1,
      seq,
      time: seq,
      kind: 'color',
      encoding: 'jpeg',
      width: 64,
      height: 48,
      intrinsics: { fx: 50, fy: 50, cx: 32, cy: 24 },
      ...(extrinsics ? { extrinsics } : {}),
    };
    const problem = d.robots.robot(robot)!.cameras.accept(camera, 'color', meta, jpeg, d.robots.now());
    assert.equal(problem, null);
  };

  const c = await openConsole(browser, d.http);
  await logIn(c, d.http);
  await pageValue(c, "brainstemConsole.view.pose('duo', 'right')", 'the dual arm in the 3-D view');
  await pageValue(c, "brainstemConsole.view.pose('arm1', 'arm')", 'the arm in the 3-D view');

  /** The shown frustum of a camera, once it satisfies `near` (a pose it must reach). */
  const frustumNear = (robot: string, camera: string, want: { apex: number[]; axis: number[] }, what: string) =>
    pageValue<{ apex: number[]; axis: number[] }>(
      c,
      `(() => {
        const f = ${shownFrustum(robot, camera)};
        const w = ${JSON.stringify(want)};
        const close = (a, b) => a.every((x, i) => Math.abs(x - b[i]) < 1e-4);
        return f && close(f.apex, w.apex) && close(f.axis, w.axis) && f;
      })()`,
      what,
      15_000,
    ).catch(async (err) => {
      const shown = await c.page.evaluate(shownFrustum(robot, camera));
      throw new Error(`${err.message}: shown ${JSON.stringify(shown)}, expected ${JSON.stringify(want)}`);
    });
  const setJoints = (robot: string, q: Record<string, number[]>) =>
    c.page.evaluate(
      `brainstemConsole.view.setState(${JSON.stringify(robot)}, ${JSON.stringify(Object.fromEntries(Object.entries(q).map(([a, v]) => [a, { q: v }])))})`,
    );

  await t.test('a frustum on arm/link (several arms) or link (one arm) follows its link at each state', async () => {
    const onLink = [0.01, -0.06, 0.03, 0, 0, Math.SQRT1_2, Math.SQRT1_2];
    frame('duo', 'lwrist', { frame: 'left/link_6', pose: onLink });
    frame('duo', 'rwrist', { frame: 'right/link_4', pose: onLink });
    frame('arm1', 'wrist6', { frame: 'link_6', pose: onLink });
    // At home, then with the left arm (and arm1) bent: each frustum moves with its own link only.
    for (const [pose, left, arm] of [
      ['home', HOME, HOME],
      ['bent', BENT, BENT],
    ] as const) {
      const duo = { left, right: HOME };
      await setJoints('duo', duo);
      await setJoints('arm1', { arm });
      await frustumNear('duo', 'lwrist', expected('dual-yam', duo, 'left/link_6', onLink), `left wrist ${pose}`);
      await frustumNear('duo', 'rwrist', expected('dual-yam', duo, 'right/link_4', onLink), `right link_4, ${pose}`);
      await frustumNear('arm1', 'wrist6', expected('yam', { arm }, 'link_6', onLink), `yam wrist ${pose}`);
    }
  });

  await t.test('a frame that names no single link is not drawn; a world pose follows the latest frame', async () => {
    // link_6 is a link of both arms of duo: which one is not said.
    frame('duo', 'either', { frame: 'link_6', pose: [0, 0, 0, 0, 0, 0, 1] });
    frame('duo', 'nowhere', { frame: 'left/no_such_link', pose: [0, 0, 0, 0, 0, 0, 1] });
    const first = [0.4, 0.1, 0.8, 0, 0, 0, 1];
    frame('duo', 'overhead', { frame: 'world', pose: first });
    await frustumNear('duo', 'overhead', expected('dual-yam', {}, 'world', first), 'the world camera');
    const moved = [0.2, -0.3, 0.6, 1, 0, 0, 0];
    frame('duo', 'overhead', { frame: 'world', pose: moved });
    await frustumNear('duo', 'overhead', expected('dual-yam', {}, 'world', moved), 'the world camera moved');
    assert.deepEqual(await c.page.evaluate(`[${shownFrustum('duo', 'either')}, ${shownFrustum('duo', 'nowhere')}]`), [
      null,
      null,
    ]);
  });

  await t.test("a simulated wrist camera (world pose at capture) is drawn on its scene mount's link", async () => {
    const scene = loadScene('yam-pick-place');
    assert.ok(scene.ok);
    const wrist = scene.value.cameras.find((x) => x.name === 'wrist')!;
    assert.equal(wrist.mount.kind, 'link');
    const runtime = d.robots.robot('arm1')!;
    const collisions = { count: 0, last: null };
    const msg = {
      v: 1 as const,
      scene: 'yam-pick-place',
      seed: 0,
      time: 0,
      objects: [],
      predicates: {},
      tasks: {},
      collisions,
    };
    runtime.simScene = { msg, at: d.robots.now() };
    await pageValue(c, "brainstemConsole.view.robots.get('arm1').desc.scene?.cameras?.length === 2", 'the scene read');
    // The metadata's pose is where the camera was at capture: not where it is now.
    frame('arm1', 'wrist', { frame: 'world', pose: [1, 1, 1, 0, 0, 0, 1] });
    const pose = Array.from(wrist.pose);
    await setJoints('arm1', { arm: HOME });
    await frustumNear('arm1', 'wrist', expected('yam', { arm: HOME }, 'arm/link_6', pose), 'the wrist at home');
    await setJoints('arm1', { arm: BENT });
    await frustumNear('arm1', 'wrist', expected('yam', { arm: BENT }, 'arm/link_6', pose), 'the wrist bent');
  });

  await t.test('a controller clock that goes back (a restart) starts the plot series afresh and says so', async () => {
    /** robots.state of arm1 at controller times from `t0`, `n` of them 0.1 s apart. */
    const states = (t0: number, n: number) =>
      c.page.evaluate(`for (let i = 0; i < ${n}; i++)
        brainstemConsole.plots.sample({ robot: 'arm1', controller_time: ${t0} + i * 0.1,
          arms: { arm: { q: [0.1 * i, 0, 0, 0, 0, 0], dq: [1, 0, 0, 0, 0, 0] } } })`);
    const plan = Array.from({ length: 10 }, (_, i) => ({ t: i * 0.1, q: [0.1 * i, 0, 0, 0, 0, 0] }));
    await c.page.evaluate(
      `brainstemConsole.plots.setPlans('arm1', { plans: { arm: { id: 'before', start_time: 100, duration_s: 0.9, points: ${JSON.stringify(plan)} } } })`,
    );
    await states(100, 10);
    const xs = '(brainstemConsole.plots.charts[0]?.data[0] ?? [])';
    await pageValue(c, `document.getElementById('plot-info').textContent.startsWith('last plan before')`, 'the plan');
    await pageValue(c, `${xs}.length >= 10`, 'the first series charted');
    await states(0.5, 6);
    // Charted on the new clock: the 6 new states only (x relative to the newest, 0.5 s back to 0).
    const shown = await pageValue<number[]>(c, `${xs}.length === 6 && Array.from(${xs})`, 'the new series charted');
    assert.ok(Math.abs(shown[0]! + 0.5) < 1e-9 && Math.abs(shown[5]!) < 1e-9, JSON.stringify(shown));
    assert.deepEqual(
      await c.page.evaluate("brainstemConsole.plots.samples.get('arm1/arm').map((s) => s.t)"),
      Array.from({ length: 6 }, (_, i) => 0.5 + i * 0.1),
    );
    const note = await c.page.textContent('.plot-note');
    assert.match(
      note!,
      /^controller clock restarted at .+ \(went back from 100\.90 s to 0\.50 s\): the series started afresh$/,
    );
    assert.equal(await c.page.evaluate("document.querySelector('.plot-note').hidden"), false);
    // The plan of the old clock is not drawn on the new one.
    assert.equal(await c.page.textContent('#plot-info'), 'no plan since the controller clock restarted');
    await states(1.1, 3);
    await pageValue(c, `${xs}.length === 9`, 'the new series growing');
  });

  await t.test(
    'a long episode: the last 200 events and 24 images shown and kept, the earlier ones counted',
    async () => {
      const id = 'ep-20250101-120000-0a0b0c';
      const dir = join(d.dataDir, 'episodes', id);
      mkdirSync(join(dir, 'images'), { recursive: true });
      writeFileSync(
        join(dir, 'episode.json'),
        JSON.stringify({ id, robot: 'arm1', instruction: 'long', state: 'done' }),
      );
      const png = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#284' } })
        .png()
        .toBuffer();
      /** Event `seq`: every fifth an observation with an image (written to the record). */
      const event = (seq: number) => {
        if (seq % 5 !== 2) return { episode: id, seq, t: seq / 10, type: 'progress', tool: 'move_to', phase: 'moving' };
        writeFileSync(join(dir, 'images', `o${seq}-front.png`), png);
        return { episode: id, seq, t: seq / 10, type: 'observation', decision: seq, images: [`o${seq}-front.png`] };
      };
      const events = Array.from({ length: 1000 }, (_, i) => event(i));
      writeFileSync(join(dir, 'events.jsonl'), `${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
      await c.page.evaluate('brainstemConsole.episodes.refreshList()');
      await c.page.evaluate(`brainstemConsole.episodes.select(${JSON.stringify(id)})`);
      /** What the page holds and shows of the episode. */
      const held = () =>
        c.page.evaluate(`(() => {
        const ep = brainstemConsole.episodes;
        const lines = [...document.querySelectorAll('#timeline > li[data-seq]')].map((li) => Number(li.dataset.seq));
        return {
          kept: ep.events.get(${JSON.stringify(id)}).map((e) => e.seq),
          lines,
          first: lines[0],
          note: document.querySelector('#timeline > li.earlier')?.textContent,
          imgs: [...document.querySelectorAll('#timeline img.thumb')].map((i) => i.alt),
          loaded: document.querySelectorAll('#timeline img.thumb[src^="data:image/png"]').length,
          thumbs: [...ep.thumbs.keys()],
        };
      })()`) as Promise<any>;
      const newest = (n: number, upTo: number) =>
        Array.from({ length: n }, (_, i) => `o${upTo - 5 * (n - 1 - i)}-front.png`);
      await pageValue(
        c,
        'document.querySelectorAll(\'#timeline img.thumb[src^="data:image/png"]\').length === 24',
        'thumbnails',
      );
      let h = await held();
      assert.deepEqual(
        h.lines,
        Array.from({ length: 200 }, (_, i) => 800 + i),
      );
      assert.deepEqual(h.kept, h.lines);
      assert.equal(h.note, '800 earlier events not shown');
      assert.deepEqual(h.imgs, newest(24, 997), 'the newest 24 of the 40 observations shown');
      assert.deepEqual(
        h.thumbs,
        h.imgs.map((i: string) => `${id}/${i}`),
      );
      // Notified events: the oldest shown go, images beyond the newest 24 are released.
      const more = Array.from({ length: 100 }, (_, i) => event(1000 + i));
      await c.page.evaluate(`for (const e of ${JSON.stringify(more)}) brainstemConsole.episodes.onEvent(e)`);
      await c.page.evaluate(`brainstemConsole.episodes.onEvent(${JSON.stringify(event(3))})`); // one already gone
      h = await held();
      assert.deepEqual(
        h.lines,
        Array.from({ length: 200 }, (_, i) => 900 + i),
      );
      assert.deepEqual(h.kept, h.lines);
      assert.equal(h.note, '900 earlier events not shown');
      assert.deepEqual(h.imgs, newest(24, 1097));
      assert.deepEqual(
        h.thumbs,
        h.imgs.map((i: string) => `${id}/${i}`),
      );
      assert.match((await c.page.textContent('#timeline li[data-seq="902"]'))!, /\[o902-front\.png\]/);
    },
  );

  assert.deepEqual(c.errors, []);
  assert.deepEqual(c.offsite, []);
});
