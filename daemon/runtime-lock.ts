// <data_dir>/daemon.lock: one daemon per data_dir. A second one would replace daemon.json and
// remove it on its stop while the first still runs. The lock holds the owner's pid; a lock whose
// pid is gone (a crash, a kill -9) is stale and replaced.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const lockFile = (dataDir: string) => join(dataDir, 'daemon.lock');

export interface LockOptions {
  pid?: number;
  /** Whether a process with this pid exists (injected in tests). */
  alive?: (pid: number) => boolean;
}

export class LockedError extends Error {
  constructor(
    readonly pid: number,
    dataDir: string,
  ) {
    super(
      `another daemon (pid ${pid}) is running on data_dir ${dataDir} (${lockFile(dataDir)}); stop it or choose another data_dir (BRAINSTEM_DATA_DIR)`,
    );
  }
}

/** Takes the lock or throws LockedError naming the live owner. */
export function acquireLock(dataDir: string, o: LockOptions = {}): void {
  const pid = o.pid ?? process.pid;
  const alive = o.alive ?? pidAlive;
  const file = lockFile(dataDir);
  // Two tries: the second after removing a stale lock (another starter may win that race).
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(file, `${pid}\n`, { flag: 'wx', mode: 0o600 });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw lockError(err, dataDir, file);
    }
    const owner = lockOwner(dataDir);
    if (owner !== undefined && owner !== pid && alive(owner)) throw new LockedError(owner, dataDir);
    rmSync(file, { force: true });
  }
}

function lockError(err: unknown, dataDir: string, file: string): Error {
  if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return err as Error;
  const owner = lockOwner(dataDir);
  return owner !== undefined
    ? new LockedError(owner, dataDir)
    : new Error(`cannot take ${file}: another daemon is starting on data_dir ${dataDir}`);
}

/** The pid in the lock; undefined when there is none or it is unreadable. */
export function lockOwner(dataDir: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(lockFile(dataDir), 'utf8'), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Removes the lock only when this process holds it (sync: runs in an 'exit' handler). */
export function releaseLock(dataDir: string, pid = process.pid): void {
  if (lockOwner(dataDir) === pid) rmSync(lockFile(dataDir), { force: true });
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
