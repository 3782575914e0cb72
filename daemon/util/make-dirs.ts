// mkdir -p that gives up: Node's recursive mkdir never returns where mkdir of a missing child
// answers ENOENT under an existing parent (pseudo file systems such as /proc).
import { lstatSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Creates `path` and its missing parents (mode for each one created); throws the first error. */
export function makeDirs(path: string, mode = 0o777): void {
  const missing: string[] = [];
  for (let p = resolve(path); ; p = dirname(p)) {
    try {
      if (!statSync(p).isDirectory())
        throw Object.assign(new Error(`${p} is not a directory`), { code: 'ENOTDIR', path: p });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT' || dirname(p) === p || isLink(p)) throw err;
      missing.push(p);
    }
  }
  for (const p of missing.reverse()) {
    try {
      mkdirSync(p, { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}

/** A link whose target is missing: not a folder to create (mkdir would answer EEXIST). */
function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}
