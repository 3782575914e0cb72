// Where a Chromium is, for the console's browser tests and `brainstem bench console`:
// BRAINSTEM_TEST_CHROMIUM, else Debian's chromium or another on PATH.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];

export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.BRAINSTEM_TEST_CHROMIUM) return env.BRAINSTEM_TEST_CHROMIUM;
  const dirs = [...(env.PATH ?? '').split(':').filter(Boolean), '/usr/bin', '/usr/local/bin'];
  for (const d of dirs) for (const n of NAMES) if (existsSync(join(d, n))) return join(d, n);
  return undefined;
}

/** SwiftShader's WebGL: the 3-D view renders headless, without a GPU. */
export const CHROMIUM_ARGS = ['--enable-unsafe-swiftshader'];
