// The operator console end to end in headless Chromium against a daemon serving a simulated yam
// in the yam-pick-place scene (a `brainstem sim` child): login, the 3-D view following the arm,
// camera frames, plots, an episode started from the form, and the e-stop working with the main
// module blocked. The page's state is read through its debug handles, never from pixels, except
// the plot check (a canvas that is not one colour).
import { test } from 'node:test';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { getChromium } from '../../helpers/browser.js';
import { TEST_TOKEN } from '../../helpers/daemon.js';
import { callTool, episodeEvents, episodeFinished, poseFromHere, startRig, waitReady } from '../robots/harness.js';
import { logIn, openConsole, pageValue } from './page.js';
import { waitFor } from '../../helpers/wait.js';

test('operator console in Chromium', async (t) => {
  const browser = await getChromium(t);
  if (!browser) return;
  const rig = (await startRig(t, 'embedded', {
    robots: [{ id: 'arm1', robot: 'yam' }],
    simExtra: { arm1: ['--scene', 'yam-pick-place', '--seed', '5', '--camera-rate', '2'] },
  }))!;
  await waitReady(rig, 'arm1', 60_000);
  const base = rig.d.http;

  await t.test(
    'a wrong token is refused; the right one logs in without the token in any URL or leaving the host',
    async () => {
      const c = await openConsole(browser, base);
      await c.page.goto(`${base}/`);
      await c.page.fill('#token', 'not-the-token-0123456789');
      await c.page.click('button[type=submit]');
      await c.page.waitForSelector('[data-login-error]:not([hidden])');
      c.errors.length = 0; // the refused login's 401
      await logIn(c, base);
      await pageValue(c, "document.getElementById('conn').dataset.state === 'open'", 'the page connected');
      assert.ok(c.urls.length > 5);
      for (const u of c.urls) assert.ok(!u.includes(TEST_TOKEN), `token in ${u}`);
      assert.ok(!c.page.url().includes(TEST_TOKEN));
      const storage = await c.page.evaluate(
        'JSON.stringify([{...sessionStorage}, {...localStorage}, document.cookie])',
      );
      assert.ok(!String(storage).includes(TEST_TOKEN), 'token in storage or a script-visible cookie');
      assert.deepEqual(c.offsite, []);
      assert.deepEqual(c.errors, []);
      await c.page.context().close();
    },
  );

  const c = await openConsole(browser, base);
  await logIn(c, base);

  await t.test(
    'the 3-D view draws the arm and its scene, and its pose follows the simulated arm through a move',
    async () => {
      const shown = () => c.page.evaluate("brainstemConsole.view.pose('arm1', 'arm')") as Promise<any>;
      const first = await pageValue<any>(c, "brainstemConsole.view.pose('arm1', 'arm')", 'the arm in the 3-D view');
      assert.ok(first.meshes >= 6, `${first.meshes} capsules`);
      await pageValue(
        c,
        "[...brainstemConsole.view.robots.get('arm1').objects.values()].filter((m) => m.visible).length === 4",
        'the four scene objects placed from sim.scene',
      );
      assert.ok(await c.page.evaluate('brainstemConsole.view.frames > 0'), 'rendered');
      const clear = await pageValue<Record<string, number>>(
        c,
        "brainstemConsole.view.clearance('arm1', 'arm')",
        'link clearances',
      );
      assert.ok(Object.keys(clear).length >= 5, JSON.stringify(clear));
      assert.ok(
        Object.values(clear).every((x) => Number.isFinite(x) && x > -0.5 && x < 2),
        JSON.stringify(clear),
      );
      const target = await poseFromHere(rig, 'arm1', 'arm', 0.08, 0.06, -0.04);
      // What the page shows, sampled until the move's outcome (bounded).
      const seen: number[][] = [];
      let moving = true;
      const watching = (async () => {
        for (let i = 0; i < 2000 && moving; i++) seen.push((await shown()).q);
      })();
      const out = await callTool(rig, 'arm1', 'move_to', { target }).finally(() => (moving = false));
      assert.equal(out.status, 'ok', out.message);
      await watching;
      const measured = out.arms.arm.q as number[];
      const end = await pageValue<any>(
        c,
        `(() => { const p = brainstemConsole.view.pose('arm1', 'arm'); const m = ${JSON.stringify(measured)}; return p.q.every((q, i) => Math.abs(q - m[i]) < 2e-3) && p; })()`,
        'the shown joints to reach the measured end of the move',
      );
      const dist = (a: number[], b: number[]) => Math.hypot(...a.map((x, i) => x - b[i]!));
      assert.ok(dist(end.q, first.q) > 0.01, 'the shown arm moved');
      assert.ok(
        seen.some((q) => dist(q, first.q) > 1e-4 && dist(q, end.q) > 1e-4),
        'a pose between the start and the end was shown',
      );
      const tcp = out.arms.arm.tcp as number[];
      assert.ok(dist(end.tcp, tcp.slice(0, 3)) < 2e-3, `page TCP ${end.tcp} vs measured ${tcp}`);
      await pageValue(
        c,
        "brainstemConsole.view.robots.get('arm1').ghosts.get('arm').model.root.visible",
        'the plan ghost',
      );
    },
  );

  await t.test('camera frames appear with their age; frusta are drawn from their metadata', async () => {
    await pageValue(c, 'document.querySelector(\'#camera-grid figure img[src^="data:image/jpeg"]\')', 'a camera frame');
    const caption = await c.page.textContent('#camera-grid figcaption');
    assert.match(caption!, /arm1 · (front|wrist) · \d+×\d+ · \d+\.\d+ s old/);
    await pageValue(c, "brainstemConsole.view.robots.get('arm1').frusta.size === 2", 'two camera frusta');
  });

  await t.test('the trajectory plots render the plan and the measured joints (canvas not one colour)', async () => {
    await pageValue(c, "document.getElementById('plot-info').textContent.startsWith('last plan')", 'plot info');
    const canvas = c.page.locator('#plots canvas').first();
    const png = await canvas.screenshot();
    const { default: sharp } = await import('sharp');
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    const colours = new Set<number>();
    for (let i = 0; i < data.length; i += info.channels)
      colours.add((data[i]! << 16) | (data[i + 1]! << 8) | data[i + 2]!);
    assert.ok(colours.size > 3, `${colours.size} colours in the plot`);
    await pageValue(
      c,
      "/settle \\d+\\.\\d+ s after its end/.test(document.getElementById('plot-info').textContent)",
      'the settle time',
    );
    await c.page.selectOption('#plot-quantity', 'jerk');
    await pageValue(c, "document.querySelector('#plots .u-title')?.textContent === 'joint1 jerk'", 'the jerk charts');
    assert.equal(await c.page.locator('#plots .uplot').count(), 6);
  });

  await t.test('an episode started from the form with the scripted provider shows its timeline', async () => {
    await c.page.selectOption('#episode-form [name=robot]', 'arm1');
    await c.page.fill('#episode-form [name=instruction]', 'look, then finish');
    await c.page.selectOption('#episode-form [name=provider]', 'scripted');
    const lines = [
      JSON.stringify({ name: 'get_state', arguments: {} }),
      JSON.stringify({ name: 'done', arguments: { summary: 'looked' } }),
    ];
    await c.page.fill('#episode-form [name=lines]', lines.join('\n'));
    await c.page.click('#episode-form button[type=submit]');
    await c.page.waitForSelector('#timeline li[data-type=finished]', { timeout: 30_000 });
    const text = await c.page.textContent('#timeline');
    assert.match(text!, /started: "look, then finish" on arm1 \(scripted/);
    assert.match(text!, /model 1: /);
    assert.match(text!, /get_state → ok/);
    assert.match(text!, /finished: done/);
    assert.equal(await c.page.textContent('#episode-state'), 'done');
    await c.page.waitForSelector('#timeline li[data-type=observation] img.thumb[src^="data:image/"]');
    await c.page.waitForSelector('#episode-list [data-state=done]');
  });

  await t.test(
    'an operator check: Confirm / Reject shows for the waiting episode only, and again after a reload',
    async () => {
      // A long instruction without spaces wraps; the page does not grow wider than the window.
      await c.page.fill('#episode-form [name=instruction]', `claim done, wait for me ${'x'.repeat(1900)}`);
      await c.page.selectOption('#episode-form [name=check]', 'operator');
      await c.page.fill('#episode-form [name=lines]', JSON.stringify({ name: 'done', arguments: { summary: 'x' } }));
      await c.page.check('#episode-form [name=detach]');
      await c.page.click('#episode-form button[type=submit]');
      await c.page.waitForSelector('#confirm-form:not([hidden])', { timeout: 30_000 });
      // The state shown is the live one, not a record's "unfinished".
      await pageValue(c, "document.querySelector('#episode-state').textContent === 'checking'", 'state checking');
      assert.ok(
        await c.page.evaluate('document.documentElement.scrollWidth <= window.innerWidth + 1'),
        'the long instruction wraps',
      );
      const id = await c.page.evaluate('brainstemConsole.episodes.selected');
      // Another, finished episode: no Confirm / Reject there.
      await c.page.click('#episode-list [data-state=done]');
      await pageValue(c, "document.querySelector('#confirm-form').hidden", 'the form hidden');
      await c.page.reload();
      await c.page.click(`#episode-list [data-id="${id}"]`);
      await c.page.waitForSelector('#confirm-form:not([hidden])', { timeout: 10_000 });
      await c.page.click('#confirm-form button[value=yes]');
      await c.page.waitForSelector('#timeline li[data-type=finished]', { timeout: 30_000 });
      assert.equal(await c.page.textContent('#episode-state'), 'done');
      assert.equal(await c.page.evaluate("document.querySelector('#confirm-form').hidden"), true);
    },
  );

  await t.test(
    'after a reconnect the selected episode is read again: a done claimed while the page was down shows Confirm',
    async () => {
      const done = (summary: string) => JSON.stringify({ name: 'done', arguments: { summary } });
      const started = await rig.rpc.call('policy.start', {
        robot: 'arm1',
        instruction: 'claim done twice',
        provider: { kind: 'scripted', lines: [done('first'), done('second')] },
        check: { kind: 'operator' },
      });
      const id = started.result.id as string;
      const pending = () => episodeEvents(rig, id).filter((e) => e.type === 'check_pending').length;
      await waitFor(() => pending() === 1 || undefined, 'the first claimed done');
      // Paused, the episode waits after the rejection below instead of claiming done again.
      await rig.rpc.call('policy.pause', { id });
      await c.page.evaluate('brainstemConsole.episodes.refreshList()');
      await c.page.evaluate(`brainstemConsole.episodes.select(${JSON.stringify(id)})`);
      await c.page.waitForSelector('#confirm-form:not([hidden])', { timeout: 10_000 });
      await c.page.click('#confirm-form button[value=no]');
      await c.page.waitForSelector('#timeline li[data-type=check]', { timeout: 10_000 });
      assert.equal(await c.page.evaluate("document.querySelector('#confirm-form').hidden"), true);
      // The page's connection down (kept from reconnecting) while the episode claims done again.
      await c.page.evaluate('brainstemConsole.rpc.connect = () => {}; brainstemConsole.rpc.ws.close()');
      await pageValue(c, "document.getElementById('conn').dataset.state === 'closed'", 'the page disconnected');
      await rig.rpc.call('policy.resume', { id });
      await waitFor(() => pending() === 2 || undefined, 'the second claimed done');
      await c.page.evaluate('delete brainstemConsole.rpc.connect; brainstemConsole.rpc.connect()');
      await c.page.waitForSelector('#confirm-form:not([hidden])', { timeout: 10_000 });
      assert.match((await c.page.textContent('#timeline'))!, /done claimed: second/);
      await c.page.click('#confirm-form button[value=yes]');
      assert.equal((await episodeFinished(rig, id)).state, 'done');
    },
  );

  await t.test('a record of an earlier run opens read-only, again on a second click', async () => {
    const id = 'ep-20250101-120000-abcdef';
    const dir = join(rig.d.dataDir, 'episodes', id);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'episode.json'),
      JSON.stringify({ id, robot: 'arm1', instruction: 'old task', state: 'done' }),
    );
    writeFileSync(join(dir, 'events.jsonl'), `${JSON.stringify({ episode: id, seq: 0, t: 0, type: 'started' })}\n`);
    await c.page.evaluate('brainstemConsole.episodes.refreshList()');
    for (let i = 0; i < 2; i++) {
      await c.page.evaluate(`brainstemConsole.episodes.select(${JSON.stringify(id)})`);
      assert.equal(await c.page.textContent('#episode-title'), `${id}: old task`, `click ${i + 1}`);
      assert.equal(await c.page.evaluate("document.getElementById('episode-stop').hidden"), true, 'read-only');
    }
  });

  await t.test('the models panel shows process sparklines from system.telemetry', async () => {
    await pageValue(
      c,
      "Number(document.querySelector('#system-sparks .spark')?.dataset.points) >= 2",
      'two telemetry points',
    );
  });
  assert.deepEqual(c.errors, []);
  assert.deepEqual(c.offsite, []);

  await t.test(
    'with the main module blocked, the e-stop (Esc) stops a move in progress; the page shows the arm at rest',
    async () => {
      const e = await openConsole(browser, base, ['/console/app.js']);
      await logIn(e, base);
      await pageValue(e, 'globalThis.brainstemEstop?.connected', 'the e-stop connection');
      assert.equal(await e.page.evaluate('globalThis.brainstemConsole'), undefined, 'the main module did not run');
      const target = await poseFromHere(rig, 'arm1', 'arm', -0.1, -0.08, 0.06);
      const move = callTool(rig, 'arm1', 'move_to', { target });
      await waitFor(async () => {
        const r = await rig.rpc.call('robots.list');
        return r.result.robots[0].busy.includes('arm') ? true : undefined;
      }, 'the arm to move');
      await e.page.keyboard.press('Escape');
      await e.page.waitForSelector('#estop-status[data-phase=rest]', { timeout: 10_000 });
      assert.match((await e.page.textContent('#estop-status'))!, /STOPPED: arm1: all arms at rest/);
      const out = await move;
      assert.equal(out.status, 'stopped', out.message);
      const s = await callTool(rig, 'arm1', 'get_state', {});
      assert.ok(Math.max(...s.arms.arm.dq.map(Math.abs)) < 0.05, 'at rest');
      await e.page.click('#estop');
      await pageValue(
        e,
        "brainstemEstop.presses === 2 && brainstemEstop.phase === 'rest'",
        'the clicked stop confirmed',
      );
    },
  );

  await t.test(
    'with the connection down, the robot card and camera captions say they show the last known state',
    async () => {
      await pageValue(c, "document.querySelector('#robot-arm1')?.dataset.stale === 'false'", 'a live robot card');
      // Drop the page's connection and keep it from reconnecting: the daemon going away, as the page sees it.
      await c.page.evaluate('brainstemConsole.rpc.connect = () => {}; brainstemConsole.rpc.ws.close()');
      await pageValue(c, "document.querySelector('#robot-arm1').dataset.stale === 'true'", 'the card marked');
      const card = (await c.page.textContent('#robot-arm1'))!;
      assert.match(card, /^disconnected from the daemon at .+; last known: arm1 \(yam, mqtt\)/);
      assert.equal(await c.page.evaluate("document.querySelector('#robot-arm1').dataset.ready"), 'false');
      const caption = (await c.page.textContent('#camera-grid figcaption'))!;
      assert.match(caption, /^no new frames: disconnected from the daemon at .+; last: arm1 · /);
      assert.equal(
        await c.page.evaluate("document.querySelector('#camera-grid figure').classList.contains('stale')"),
        true,
      );
    },
  );
});
