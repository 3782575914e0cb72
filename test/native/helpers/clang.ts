// Finding clang for the checks that compile as Apple's toolchain would (the MSL check, the
// libc++ build check): Debian's versioned names count too.
import { spawnSync } from 'node:child_process';

/** A clang++ on the path; throws under CI=true when there is none (.ci/run installs clang). */
export function findClang(): string | undefined {
  const r = spawnSync('sh', ['-c', 'command -v clang++ || ls /usr/bin/clang++-* 2>/dev/null | sort -V | tail -1'], {
    encoding: 'utf8',
  });
  const found = r.stdout.trim().split('\n')[0];
  if (found) return found;
  if (process.env.CI === 'true') throw new Error('CI=true but clang++ is missing (.ci/run installs clang)');
  return undefined;
}
