// Headless Chromium for the console's end-to-end tests, driven by playwright-core:
// BRAINSTEM_TEST_CHROMIUM, else Debian's /usr/bin/chromium or another on PATH. Without one the
// test is skipped locally but fails when CI=true (.ci/run installs chromium).
import type { TestContext } from 'node:test';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_ARGS, findChromium } from '../../daemon/console/chromium.js';

/** A headless Chromium closed after the test, or undefined after t.skip() when none is installed outside CI. */
export async function getChromium(t: TestContext): Promise<Browser | undefined> {
  const executablePath = findChromium();
  if (!executablePath) {
    if (process.env.CI === 'true') throw new Error('CI=true but chromium is not installed (.ci/run installs it)');
    t.skip('chromium is not installed (apt-get install chromium)');
    return undefined;
  }
  const browser = await chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS });
  t.after(() => browser.close());
  return browser;
}
