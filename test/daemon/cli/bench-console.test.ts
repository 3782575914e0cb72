// `brainstem bench console` loads the page and stops a move in Chromium and prints the documented
// JSON (numbers are benchmark output, not asserted); skipped like the browser tests without Chromium.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findChromium } from '../../../daemon/console/chromium.js';
import { runCli } from '../../helpers/daemon.js';

test('bench console --json: bundle, first_load_ms and estop_ms with their keys', async (t) => {
  if (!findChromium()) {
    if (process.env.CI === 'true') throw new Error('CI=true but chromium is not installed (.ci/run installs it)');
    return t.skip('chromium is not installed');
  }
  const r = await runCli(['bench', 'console', '--json', '--loads', '1', '--stops', '1'], {}, { timeoutMs: 120_000 });
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(out), ['bundle', 'first_load_ms', 'estop_ms']);
  assert.ok(out.bundle.vendor_gzip_bytes > 100_000 && out.bundle.page_gzip_bytes > 1000);
  assert.deepEqual(Object.keys(out.first_load_ms), ['login_to_connected', 'login_to_arm_drawn']);
  assert.deepEqual(Object.keys(out.estop_ms.press_to_rest_confirmed), ['p50', 'min', 'max', 'n']);
  assert.equal(out.estop_ms.press_to_rest_confirmed.n, 1);
  const bad = await runCli(['bench', 'console', '--loads', '0']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--loads must be an integer in \[1, 1000\], got "0"/);
});
