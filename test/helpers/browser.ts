// Headless Chromium for the console's end-to-end tests, driven by playwright-core:
// BRAINSTEM_TEST_CHROMIUM, else Debian's /usr/bin/chromium or another on PATH. Without one the
// test is skipped locally but fails when CI=true (.ci/run installs chromium).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { chromium, type Browser } from 'playwright-core';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

export function findChromium(): string | undefined {
  const fromEnv = process.env.BRAINSTEM_TEST_CHROMIUM;
  if (fromEnv) return fromEnv;
  const dirs = [...(process.env.PATH ?? '').split(':').filter(Boolean), '/usr/bin', '/usr/local/bin'];
  for (const d of dirs) for (const n of NAMES) if (existsSync(join(d, n))) return join(d, n);
  return undefined;
}

/** A headless Chromium closed after the test, or undefined after t.skip() when none is installed outside CI. */
export async function getChromium(t: TestContext): Promise<Browser | undefined> {
  const executablePath = findChromium();
  if (!executablePath) {
    if (process.env.CI === 'true') throw new Error('CI=true but chromium is not installed (.ci/run installs it)');
    t.skip('chromium is not installed (apt-get install chromium)');
    return undefined;
  }
  // SwiftShader's WebGL: the 3-D view renders without a GPU.
  const browser = await chromium.launch({ executablePath, headless: true, args: ['--enable-unsafe-swiftshader'] });
  t.after(() => browser.close());
  return browser;
}
