// Which adapter a chat request runs with: the WebSocket `chat` param `adapter`, or an HTTP model
// name "model:adapter" (OpenAI clients only send `model`). A name that is itself a loaded model id
// is never split, so model ids may contain ':'. Unknown names are RequestErrors naming the field.
import { show } from '../json-schema/schema.js';
import type { NativeAdapter } from '../native-model.js';
import { RequestError } from '../request-error.js';
import type { AdapterManager } from './adapter-manager.js';

export interface ModelChoice {
  model: string;
  adapter: string | null;
}

/** Splits an OpenAI `model` field into a loaded model id and an optional adapter name. */
export function splitModelName(name: string, isModel: (id: string) => boolean): ModelChoice {
  if (isModel(name)) return { model: name, adapter: null };
  const at = name.lastIndexOf(':');
  if (at > 0 && at < name.length - 1 && isModel(name.slice(0, at))) return { model: name.slice(0, at), adapter: name.slice(at + 1) };
  return { model: name, adapter: null };
}

/** The request's adapter (null: the base model); `param` is an explicit `adapter` field. */
export function selectAdapter(adapters: AdapterManager | undefined, choice: ModelChoice, param?: unknown): NativeAdapter | null {
  if (param !== undefined && param !== null && typeof param !== 'string') throw new RequestError('adapter', 'type', `must be a string (an adapter name) or null, got ${show(param)}`);
  if (typeof param === 'string' && choice.adapter !== null && param !== choice.adapter) {
    throw new RequestError('adapter', 'conflict', `names "${param}" but model names "${choice.model}:${choice.adapter}"`);
  }
  const name = (param as string | null | undefined) ?? choice.adapter;
  if (name === null || name === undefined || name === '') return null;
  const field = typeof param === 'string' ? 'adapter' : 'model';
  if (!adapters?.has(name)) {
    const loaded = adapters?.list().map((a) => a.name) ?? [];
    throw new RequestError(field, 'unknown_adapter', `adapter "${name}" is not loaded for model "${choice.model}" (loaded: ${loaded.join(', ') || 'none'})`);
  }
  return adapters.get(name);
}
