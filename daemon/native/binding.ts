// The whole native surface, typed in one place, and the loader for the addon.
// Slow native calls return Promises (async workers); no C++ exception crosses into JS.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface BackendInfo {
  name: string;
  compiled: boolean;
  usable: boolean;
  detail: string;
}

export interface NativeInfo {
  version: string;
  cpuFeatures: string;
  backends: BackendInfo[];
}

export interface NativeAddon {
  info(): NativeInfo;
}

export class NativeLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NativeLoadError';
  }
}

/** Repository root: dist/daemon/native → ../../.. */
export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const addonPath = join(repoRoot, 'build', 'Release', 'brainstem.node');

let cached: NativeAddon | undefined;

/** Loads the addon once; throws NativeLoadError naming the command that builds it. */
export function loadNative(): NativeAddon {
  if (cached) return cached;
  if (!existsSync(addonPath)) {
    throw new NativeLoadError(
      `native addon not found at ${addonPath}; build it with \`npm run build:native\` (needs cmake and a C++ compiler)`,
    );
  }
  try {
    const require = createRequire(import.meta.url);
    cached = require(addonPath) as NativeAddon;
    return cached;
  } catch (err) {
    throw new NativeLoadError(
      `native addon at ${addonPath} failed to load (${(err as Error).message}); rebuild it with \`npm run build:native\``,
    );
  }
}

/** Like loadNative but returns the error instead of throwing (for doctor and health). */
export function tryLoadNative(): { addon?: NativeAddon; error?: string } {
  try {
    return { addon: loadNative() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}
