// This process's memory and I/O counters from /proc/self (Linux); null where unavailable
// (macOS), so benchmarks report what the OS knows instead of guessing.
import { readFileSync } from 'node:fs';

export interface MemoryStats {
  /** Anonymous resident memory (heap, KV cache, buffers): RssAnon. */
  rssAnonBytes: number | null;
  /** File-backed resident memory (mmapped weights in the page cache): RssFile. */
  rssFileBytes: number | null;
  /** Peak resident set: VmHWM. */
  peakRssBytes: number | null;
  /** Current resident set: VmRSS, or process.memoryUsage().rss off Linux. */
  rssBytes: number;
}

function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

/** Parses `Key:   1234 kB` lines of /proc/<pid>/status text into bytes. */
export function parseProcStatus(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\w+):\s+(\d+)\s*kB$/.exec(line.trim());
    if (m) out.set(m[1]!, Number(m[2]) * 1024);
  }
  return out;
}

export function memoryStats(statusText: string | null = readOrNull('/proc/self/status')): MemoryStats {
  const s = statusText ? parseProcStatus(statusText) : new Map<string, number>();
  return {
    rssAnonBytes: s.get('RssAnon') ?? null,
    rssFileBytes: s.get('RssFile') ?? null,
    peakRssBytes: s.get('VmHWM') ?? null,
    rssBytes: s.get('VmRSS') ?? process.memoryUsage().rss,
  };
}

/** Bytes this process caused to be read from storage (read_bytes of /proc/self/io), or null. */
export function diskReadBytes(ioText: string | null = readOrNull('/proc/self/io')): number | null {
  const m = ioText ? /^read_bytes:\s*(\d+)$/m.exec(ioText) : null;
  return m ? Number(m[1]) : null;
}
