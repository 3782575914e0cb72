// The console in headless Chromium against a daemon serving a yam with no controller, its /ws
// routed through the test (page.ts tapRpc) to count the page's requests and hold some back: the
// 3-D view rebuilt only when its description changes, and what a rebuild replaces disposed; a
// poll never overlapping its own slow run; the e-stop saying so when no answer comes. Time is
// measured in the page's own polls (sim.scene twice a second), never asserted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getChromium } from '../../helpers/browser.js';
import { startTestDaemon } from '../../helpers/daemon.js';
import { waitFor } from '../../helpers/wait.js';
import { logIn, openConsole, pageValue, tapRpc } from './page.js';

test('console resilience on a daemon serving arm1 (yam) without a controller', async (t) => {
  const browser = await getChromium(t);
  if (!browser) return;
  const d = await startTestDaemon({ robots: { serve: [{ id: 'arm1', robot: 'yam', transport: 'mqtt' }] } });
  t.after(() => d.stop());
  const runtime = d.robots.robot('arm1')!;
  /** What a simulator of `scene` reports (no objects yet). */
  const announce = (scene: string) => {
    const collisions = { count: 0, last: null };
    const msg = { v: 1 as const, scene, seed: 0, time: 0, objects: [], predicates: {}, tasks: {}, collisions };
    runtime.simScene = { msg, at: d.robots.now() };
  };
  announce('a-lab-not-shipped');

  const c = await openConsole(browser, d.http);
  const tap = await tapRpc(c);
  await logIn(c, d.http);
  const count = (method: string) => tap.sent.filter((m) => m === method).length;
  /** Resolves once the page has polled sim.scene `n` more times (every 500 ms). */
  const scenePolls = (n: number) => {
    const from = count('sim.scene');
    return waitFor(() => count('sim.scene') >= from + n || undefined, `${n} sim.scene polls`, 30_000);
  };

  await t.test('a scene without a shipped layout is read once, not rebuilt every poll; a new scene is', async () => {
    await pageValue(c, "brainstemConsole.view.pose('arm1', 'arm')", 'the arm in the 3-D view');
    await scenePolls(2);
    await c.page.evaluate("brainstemConsole.view.robots.get('arm1').group.userData.first = true");
    const described = count('robots.describe');
    await scenePolls(4);
    assert.equal(count('robots.describe'), described, 'robots.describe read again');
    assert.ok(described <= 2, `${described} robots.describe`);
    assert.equal(
      await c.page.evaluate("brainstemConsole.view.robots.get('arm1').group.userData.first"),
      true,
      'the view was rebuilt',
    );
    announce('yam-pick-place');
    await pageValue(c, "brainstemConsole.view.robots.get('arm1').objects.size === 4", "the new scene's objects");
  });

  await t.test('a rebuild disposes the geometries and own materials it replaces; a new plan its old path', async () => {
    const r = await c.page.evaluate(`(() => {
      const view = brainstemConsole.view;
      const old = view.robots.get('arm1');
      const disposed = new Set();
      const watch = (x) => x.addEventListener('dispose', () => disposed.add(x));
      const geometries = new Set();
      const capsule = new Set(); // LINK, the band colours, GHOST: shared by every build
      const own = new Set(); // the table's, the objects', the obstacles'
      old.group.traverse((o) => {
        if (o.geometry) geometries.add(o.geometry);
        if (o.material) (o.userData.link === undefined ? own : capsule).add(o.material);
      });
      for (const x of [...geometries, ...capsule, ...own]) watch(x);
      view.addRobot(old.desc);
      const n = (set) => [...set].filter((x) => disposed.has(x)).length;
      const plan = (id) => ({ arm: { id, points: [{ t: 0, q: [0, 0, 0, 0, 0, 0] }, { t: 1, q: [0.2, 0, 0, 0, 0, 0] }] } });
      view.setPlans('arm1', plan('p1'));
      const ghost = view.robots.get('arm1').ghosts.get('arm');
      const path = ghost.path.geometry;
      watch(path);
      view.setPlans('arm1', plan('p2'));
      return {
        geometries: [geometries.size, n(geometries)],
        own: [own.size, n(own)],
        capsule: [capsule.size, n(capsule)],
        path: disposed.has(path) && ghost.path.geometry !== path,
      };
    })()`);
    const { geometries, own, capsule, path } = r as Record<string, number[]> & { path: boolean };
    assert.ok(geometries[0]! > 10 && own[0]! >= 5 && capsule[0]! >= 2, JSON.stringify(r));
    assert.equal(geometries[1], geometries[0], `geometries disposed: ${JSON.stringify(r)}`);
    assert.equal(own[1], own[0], `own materials disposed: ${JSON.stringify(r)}`);
    assert.equal(capsule[1], 0, `shared materials kept: ${JSON.stringify(r)}`);
    assert.equal(path, true, 'the old path disposed');
  });

  await t.test('a poll does not start again while its previous run waits for an answer', async () => {
    tap.hold.add('robots.plans');
    const from = count('robots.plans');
    await waitFor(() => count('robots.plans') > from || undefined, 'a robots.plans request held');
    await scenePolls(6); // over 2.5 s: three or more ticks of the 700 ms plans poll
    assert.equal(count('robots.plans'), from + 1, 'robots.plans asked again while the first was pending');
    tap.hold.delete('robots.plans');
    tap.release();
    await waitFor(() => count('robots.plans') > from + 1 || undefined, 'the plans poll going on after the answer');
  });

  await t.test('an e-stop press with no answer says the stop is not confirmed; STOP again retries', async () => {
    await pageValue(c, 'globalThis.brainstemEstop?.connected', 'the e-stop connection');
    await c.page.evaluate('brainstemEstop.timeoutMs = 300');
    tap.hold.add('robots.stop');
    await c.page.click('#estop');
    await c.page.waitForSelector('#estop-status[data-phase=unconfirmed]', { timeout: 10_000 });
    assert.equal(
      await c.page.textContent('#estop-status'),
      'STOP NOT CONFIRMED: no answer from the daemon in 0.3 s. Use the hardware stop; STOP retries on a new connection.',
    );
    // The silent connection is set aside (kept for a late answer) and a new one opened for the retry.
    await pageValue(c, 'brainstemEstop.connections >= 2', 'a second e-stop connection');
    // The answer, when it comes late, replaces the line (this robot has no controller to confirm).
    tap.hold.delete('robots.stop');
    tap.release();
    await c.page.waitForSelector('#estop-status[data-phase=problem]', { timeout: 10_000 });
    assert.match((await c.page.textContent('#estop-status'))!, /^STOP SENT, CHECK: arm1: /);
    await c.page.evaluate('brainstemEstop.timeoutMs = 60_000');
    await c.page.click('#estop');
    await pageValue(
      c,
      "brainstemEstop.presses === 2 && brainstemEstop.phase === 'problem'",
      'the retried stop answered',
    );
    assert.equal(count('robots.stop'), 2);
  });

  await t.test('a login that ends elsewhere (logout from another tab) takes the page to the login form', async () => {
    const cookie = (await c.page.context().cookies()).map((k) => `${k.name}=${k.value}`).join('; ');
    const out = await fetch(`${d.http}/console/logout`, { method: 'POST', redirect: 'manual', headers: { cookie } });
    assert.equal(out.status, 303);
    await c.page.waitForSelector('#token', { timeout: 10_000 });
  });
  assert.deepEqual(c.errors, []);
});
