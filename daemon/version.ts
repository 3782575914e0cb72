// The daemon's version, from package.json (one source of truth for the CLI and system.info).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './util/repo-root.js';

export const VERSION: string = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string })
  .version;
