// Memory-limited control groups for benchmarks: a child cgroup of this process's own, with a
// memory limit that counts the page cache (cgroup v1 memory controller: memory.limit_in_bytes;
// v2: memory.max). Where neither is available or writable, says why instead of failing.
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface MemoryCgroup {
  version: 1 | 2;
  /** The cgroup directory. */
  path: string;
  limitBytes: number;
  /** Shell words that move the shell into the cgroup before exec'ing the command. */
  wrap(argv: string[]): string[];
  /** Peak memory use (page cache included) since the last resetPeak, or null. */
  peakBytes(): number | null;
  /** Zeroes the peak (v1 only; v2 keeps its peak). */
  resetPeak(): void;
  /** Processes killed by the OOM killer in this cgroup so far, or null when unknown. */
  oomKills(): number | null;
  remove(): void;
}

export interface CgroupMount {
  version: 1 | 2;
  mountPoint: string;
  /** This process's path inside that hierarchy. */
  ownPath: string;
}

/** The memory controller's hierarchy from /proc/self/cgroup and /proc/self/mountinfo texts. */
export function findMemoryHierarchy(procCgroup: string, mountinfo: string): CgroupMount | undefined {
  const mounts = mountinfo.split('\n').map((l) => {
    const [pre, post] = l.split(' - ');
    const f = (pre ?? '').split(' ');
    const g = (post ?? '').split(' ');
    return { mountPoint: f[4] ?? '', root: f[3] ?? '/', fstype: g[0] ?? '', options: (g[2] ?? '').split(',') };
  });
  const lines = procCgroup.split('\n').filter((l) => l.trim() !== '');
  for (const l of lines) {
    const [, , controllers, path] = /^(\d+):([^:]*):(.*)$/.exec(l) ?? [];
    if (controllers?.split(',').includes('memory')) {
      const m = mounts.find((x) => x.fstype === 'cgroup' && x.options.includes('memory'));
      if (m) return { version: 1, mountPoint: m.mountPoint, ownPath: relative(path!, m.root) };
    }
  }
  const v2 = lines.find((l) => l.startsWith('0::'));
  const m = mounts.find((x) => x.fstype === 'cgroup2');
  if (v2 && m) return { version: 2, mountPoint: m.mountPoint, ownPath: relative(v2.slice(3), m.root) };
  return undefined;
}

function relative(path: string, root: string): string {
  return root !== '/' && path.startsWith(root) ? path.slice(root.length) || '/' : path;
}

function readNumber(file: string): number | null {
  try {
    const v = Number(readFileSync(file, 'utf8').trim());
    return Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
}

function readKey(file: string, key: string): number | null {
  try {
    const m = new RegExp(`^${key} (\\d+)$`, 'm').exec(readFileSync(file, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Creates `<own cgroup>/<name>` with the limit, or returns why it cannot. */
export function createMemoryCgroup(limitBytes: number, name: string): { cgroup?: MemoryCgroup; reason?: string } {
  if (process.platform !== 'linux')
    return { reason: `memory-limited cgroups are a Linux feature (this is ${process.platform})` };
  let h: CgroupMount | undefined;
  try {
    h = findMemoryHierarchy(readFileSync('/proc/self/cgroup', 'utf8'), readFileSync('/proc/self/mountinfo', 'utf8'));
  } catch (e) {
    return { reason: `cannot read /proc/self/cgroup or mountinfo (${(e as Error).message})` };
  }
  if (!h) return { reason: 'no cgroup memory controller is mounted (neither v1 "memory" nor cgroup2)' };
  const parent = join(h.mountPoint, h.ownPath);
  const path = join(parent, name);
  try {
    if (h.version === 2) {
      const controllers = readFileSync(join(parent, 'cgroup.controllers'), 'utf8').split(/\s+/);
      if (!controllers.includes('memory'))
        return { reason: `cgroup v2 at ${parent} does not offer the memory controller` };
      const sub = readFileSync(join(parent, 'cgroup.subtree_control'), 'utf8').split(/\s+/);
      if (!sub.includes('memory')) writeFileSync(join(parent, 'cgroup.subtree_control'), '+memory');
    }
    if (!existsSync(path)) mkdirSync(path);
    if (h.version === 1) {
      writeFileSync(join(path, 'memory.limit_in_bytes'), String(limitBytes));
      // With swap, also cap memory + swap so anonymous pages cannot escape the limit.
      if (existsSync(join(path, 'memory.memsw.limit_in_bytes'))) {
        try {
          writeFileSync(join(path, 'memory.memsw.limit_in_bytes'), String(limitBytes));
        } catch {
          /* swap accounting off: nothing to cap */
        }
      }
    } else {
      writeFileSync(join(path, 'memory.max'), String(limitBytes));
      if (existsSync(join(path, 'memory.swap.max'))) writeFileSync(join(path, 'memory.swap.max'), '0');
    }
  } catch (e) {
    try {
      rmdirSync(path);
    } catch {
      /* not created */
    }
    return { reason: `cannot set up a memory cgroup under ${parent} (${(e as Error).message})` };
  }
  const v1 = h.version === 1;
  return {
    cgroup: {
      version: h.version,
      path,
      limitBytes,
      wrap: (argv) => ['/bin/sh', '-c', `echo $$ > '${join(path, 'cgroup.procs')}' && exec "$@"`, 'sh', ...argv],
      peakBytes: () => readNumber(join(path, v1 ? 'memory.max_usage_in_bytes' : 'memory.peak')),
      resetPeak: () => {
        if (!v1) return;
        try {
          writeFileSync(join(path, 'memory.max_usage_in_bytes'), '0');
        } catch {
          /* old kernels */
        }
      },
      oomKills: () => readKey(join(path, v1 ? 'memory.oom_control' : 'memory.events'), 'oom_kill'),
      remove: () => {
        try {
          rmdirSync(path);
        } catch {
          /* still busy or gone */
        }
      },
    },
  };
}

/** "4GiB", "512MiB", "4G", "1.5GB", "1000000" → bytes (binary units for K/M/G/T and KiB…, decimal for KB/MB/GB/TB). */
export function parseSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$/i.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  const unit = m[2]!.toLowerCase();
  const decimal = m[3]!.toLowerCase() === 'b';
  const pow = { '': 0, k: 1, m: 2, g: 3, t: 4 }[unit as '' | 'k' | 'm' | 'g' | 't'];
  const bytes = n * (decimal ? 1000 : 1024) ** pow;
  return Number.isFinite(bytes) ? Math.round(bytes) : undefined;
}
