// Where a process's memory is, for `bench load`: RSS split into the V8 heap (used and reserved),
// memory outside it (Buffers, socket and zlib state) and ArrayBuffers; and a forced full GC, so
// retained objects are told apart from heap the collector has not yet returned.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface MemorySample {
  rss: number;
  heap_used: number;
  heap_total: number;
  external: number;
  array_buffers: number;
}

const MiB = (b: number) => Math.round((b / (1 << 20)) * 1000) / 1000;

export function memorySample(): MemorySample {
  const m = process.memoryUsage();
  return {
    rss: MiB(m.rss),
    heap_used: MiB(m.heapUsed),
    heap_total: MiB(m.heapTotal),
    external: MiB(m.external),
    array_buffers: MiB(m.arrayBuffers),
  };
}

/** The field-wise maximum of two samples. */
export function peakOf(a: MemorySample, b: MemorySample): MemorySample {
  const out = { ...a };
  for (const k of Object.keys(out) as (keyof MemorySample)[]) out[k] = Math.max(a[k], b[k]);
  return out;
}

/** A full garbage collection now (exposing `gc` for the moment it takes). */
export function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}
