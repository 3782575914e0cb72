// The streaming profile sized from the memory budget and the model's geometry: which expert path
// each phase takes, staged slots, hot cache, I/O threads and I/O mode. A pure function, so
// `doctor`, `start` and `bench decode` make the same choice and tests can check its rules. The
// paths follow the measured grid in docs/streaming.md: under a limit the exact path reading
// through the page cache beat staged slots with direct reads, and whole-layer prefill reads each
// expert once per chunk.
import type { ExpertPath, IoMode } from '../native/binding.js';

export interface ModelGeometry {
  /** Bytes of all tensors in the weight files. */
  fileBytes: number;
  /** Bytes of one routed expert (gate + up + down) of one layer. */
  expertBytes: number;
  moeLayers: number;
  /** Routed experts per MoE layer. */
  experts: number;
  /** Routing width K in use. */
  topK: number;
}

export interface AutoStreamInput extends ModelGeometry {
  /** Memory the engine may use, page cache included (cgroup limit or total memory). */
  budgetBytes: number;
}

export interface AutoStream {
  prefillPath: ExpertPath;
  decodePath: ExpertPath;
  /** Staged slots per MoE layer (used when a staged path is chosen or forced). */
  slots: number;
  /** Hot-path resident experts over all MoE layers, in bytes. */
  cacheBytes: number;
  ioThreads: number;
  ioMode: IoMode;
  /** The weights stay in the page cache whole. */
  resident: boolean;
  /** Anonymous bytes the chosen paths pin, plus the weights when resident: never above the budget. */
  plannedBytes: number;
  reasons: string[];
}

const MiB = 1024 ** 2;
/** Kept free of planning: KV cache, activations, the runtime (at least 512 MiB or an eighth). */
export const reserveBytes = (budget: number) => Math.max(512 * MiB, Math.floor(budget / 8));

const fmt = (b: number) => `${(b / 1024 ** 3).toFixed(2)} GiB`;

export function autoStream(g: AutoStreamInput): AutoStream {
  const budget = Math.max(0, g.budgetBytes);
  const reserve = reserveBytes(budget);
  const routed = g.moeLayers * g.experts * g.expertBytes;
  const dense = Math.max(0, g.fileBytes - routed);
  const layerSet = g.moeLayers * g.expertBytes; // one expert in every MoE layer
  const free = Math.max(0, budget - reserve - dense);
  const reasons: string[] = [];
  const resident = g.fileBytes + reserve <= budget;
  // Half of what the dense weights leave goes to buffers, half stays for the page cache's reuse.
  const share = Math.floor(free / 2);
  const fitSlots = layerSet > 0 ? Math.floor(share / layerSet) - 1 : 0; // + the zero slot
  const slots = Math.max(1, Math.min(g.experts, fitSlots));
  const cacheSets = layerSet > 0 ? Math.min(g.experts, Math.floor(share / layerSet) - 1) : 0;
  const cacheBytes = Math.max(0, cacheSets) * layerSet;
  if (resident) {
    reasons.push(
      `weights ${fmt(g.fileBytes)} + reserve ${fmt(reserve)} fit the budget ${fmt(budget)}: exact paths over the page cache, nothing pinned`,
    );
    return {
      prefillPath: 'exact',
      decodePath: 'exact',
      slots,
      cacheBytes,
      ioThreads: 2,
      ioMode: 'page-cache',
      resident,
      plannedBytes: g.fileBytes,
      reasons,
    };
  }
  reasons.push(
    `weights ${fmt(g.fileBytes)} exceed the budget ${fmt(budget)} less reserve ${fmt(reserve)}: experts stream from disk`,
  );
  reasons.push('decode exact through the page cache: it beat staged slots with direct reads under 4 and 8 GiB');
  reasons.push('prefill whole-layer: each chunk reads every expert of a layer once, in large sequential reads');
  // Page-cache whole-layer reads of the layer being computed and the next one must fit beside the dense weights.
  const layerBytes = g.experts * g.expertBytes;
  const prefillPath: ExpertPath = 2 * layerBytes <= free ? 'whole-layer' : 'exact';
  if (prefillPath === 'exact') reasons.push(`two layers (${fmt(2 * layerBytes)}) do not fit: prefill exact`);
  // One I/O thread per two routed experts of a layer, 2..8: reads of a layer's K experts overlap.
  const ioThreads = Math.max(2, Math.min(8, Math.ceil(g.topK / 2)));
  reasons.push(
    `${ioThreads} I/O threads for K=${g.topK}; staged slots ${slots}, hot cache ${fmt(cacheBytes)} if chosen`,
  );
  return {
    prefillPath,
    decodePath: 'exact',
    slots,
    cacheBytes,
    ioThreads,
    ioMode: 'page-cache',
    resident,
    plannedBytes: 0,
    reasons,
  };
}

/** Anonymous bytes a staged path with `slots` pins, with its zero slot. */
export const stagedBytes = (g: ModelGeometry, slots: number) => (slots + 1) * g.moeLayers * g.expertBytes;
