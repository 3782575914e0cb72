// The repository root, found from this compiled file's place (dist/daemon/util → ../../..), for
// the files the daemon reads beside its code: package.json, configs/, build/, dist/.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
