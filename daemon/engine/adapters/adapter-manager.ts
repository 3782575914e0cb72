// The LoRA adapters resident for one loaded model, by name: load (read the format → plan →
// native copy of A/B), unload, list, memory. The model stays loaded throughout; requests pick an
// adapter by name and sessions switch without a reload. Unloading drops the manager's reference:
// a session still running with the adapter keeps it alive until it switches away.
import { SafetensorsError } from '../../models/safetensors-reader.js';
import type { FileRoots } from '../../util/file-roots.js';
import { EngineError, type NativeAdapter, type NativeModel } from '../native-model.js';
import type { AdapterFormat, AdapterPlan } from './plan.js';
import { AdapterError } from './plan.js';
import { readAdapter, type ReadAdapterOptions } from './read-adapter.js';

/** Adapter names: used in HTTP model names `model:adapter`, so no ':' and no spaces. */
export const ADAPTER_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** The engine calls the manager needs (NativeModel provides them). */
export type AdapterHost = Pick<NativeModel, 'loadAdapter'> & { readonly summary: { layers: number } };

export interface AdapterInfo {
  name: string;
  /** Unique per load. */
  id: string;
  format: AdapterFormat;
  /** Folder or file it was read from. */
  source: string;
  modules: number;
  /** Distinct ranks over the modules, ascending. */
  ranks: number[];
  /** Bytes of A and B in memory. */
  bytes: number;
}

/** An unknown adapter name (the API layers map it to a not-found error). */
export class AdapterNotFoundError extends AdapterError {
  constructor(
    readonly adapter: string,
    known: string[],
  ) {
    super(`adapter "${adapter}" is not loaded (loaded: ${known.length > 0 ? known.join(', ') : 'none'})`, 'name');
    this.name = 'AdapterNotFoundError';
  }
}

interface Entry {
  adapter: NativeAdapter;
  plan: AdapterPlan;
}

export class AdapterManager {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Set<string>();

  constructor(
    private readonly host: AdapterHost,
    /** Where adapters may be read from (absent: anywhere; the daemon always sets it). */
    private readonly roots?: FileRoots,
    /** Most adapters resident at once. */
    readonly maxAdapters = 16,
  ) {}

  /** Reads the adapter at `path` (PEFT, mlx-lm or Edge0) and loads it as `name`. */
  async load(name: string, path: string, format?: AdapterFormat): Promise<AdapterInfo> {
    if (!ADAPTER_NAME.test(name)) {
      throw new AdapterError(
        `adapter name must be 1-64 letters, digits, '.', '_' or '-' (starting with a letter or digit), got ${JSON.stringify(name)}`,
        'name',
      );
    }
    if (this.entries.has(name) || this.pending.has(name))
      throw new AdapterError(`adapter "${name}" is already loaded; unload it first`, 'name');
    if (this.entries.size + this.pending.size >= this.maxAdapters) {
      throw new AdapterError(`${this.maxAdapters} adapters are already resident (the limit); unload one first`, 'name');
    }
    this.pending.add(name);
    try {
      // Inside the roots, regular files only (checked off the event loop), before any is opened.
      const source = this.roots ? (await this.roots.entry(path)).real : path;
      const plan = await readPlan(source, { layers: this.host.summary.layers, name, ...(format ? { format } : {}) });
      // The engine's checks against the model (modules, shapes, dtypes) make it a bad adapter too.
      const adapter = await this.host.loadAdapter(plan).catch((e: Error) => {
        throw e instanceof EngineError ? new AdapterError(e.message) : e;
      });
      this.entries.set(name, { adapter, plan });
      return info(adapter, plan);
    } finally {
      this.pending.delete(name);
    }
  }

  /** Drops the adapter; returns what it was. */
  unload(name: string): AdapterInfo {
    const e = this.entry(name);
    this.entries.delete(name);
    e.adapter.dispose();
    return info(e.adapter, e.plan);
  }

  get(name: string): NativeAdapter {
    return this.entry(name).adapter;
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  list(): AdapterInfo[] {
    return [...this.entries.values()].map((e) => info(e.adapter, e.plan)).sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Bytes of every resident adapter's A and B. */
  bytes(): number {
    let n = 0;
    for (const e of this.entries.values()) n += e.adapter.summary.bytes;
    return n;
  }

  /** Unloads everything (the model is going away). */
  clear(): void {
    for (const name of [...this.entries.keys()]) this.unload(name);
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw new AdapterNotFoundError(name, [...this.entries.keys()].sort());
    return e;
  }
}

/** readAdapter, with a malformed safetensors file, or a file of the adapter that cannot be opened
 *  (adapter_config.json missing beside the weights), reported as the bad adapter it is. */
async function readPlan(path: string, o: ReadAdapterOptions): Promise<AdapterPlan> {
  try {
    return await readAdapter(path, o);
  } catch (e) {
    if (e instanceof SafetensorsError) throw new AdapterError(e.message);
    const io = e as NodeJS.ErrnoException;
    if (io.code && io.path) {
      const what = io.code === 'ENOENT' ? 'is missing' : `cannot be opened (${io.code})`;
      throw new AdapterError(`${io.path} ${what}: the adapter at ${path} needs it`);
    }
    throw e;
  }
}

function info(a: NativeAdapter, plan: AdapterPlan): AdapterInfo {
  const ranks = [...new Set(a.summary.modules.map((m) => m.rank))].sort((x, y) => x - y);
  return {
    name: a.name,
    id: a.id,
    format: plan.format,
    source: plan.source,
    modules: a.summary.modules.length,
    ranks,
    bytes: a.summary.bytes,
  };
}
