// Which adapter a chat request runs with: the WebSocket `chat` param `adapter`, or the model name
// "model:adapter" (OpenAI clients only send `model`; chat-service's parseModelRef splits it).
// Unknown names are RequestErrors naming the field they came from.
import { showValue } from '../../../robot/common/validation/values.js';
import type { NativeAdapter } from '../native-model.js';
import { RequestError } from '../request-error.js';
import type { AdapterManager } from './adapter-manager.js';

/** The request's adapter (null: the base model): `ref.adapter` from the model name, or `param`. */
export function selectAdapter(
  adapters: AdapterManager | undefined,
  ref: { name: string; adapter?: string },
  param?: unknown,
): NativeAdapter | null {
  if (param !== undefined && param !== null && typeof param !== 'string')
    throw new RequestError('adapter', 'type', `must be a string (an adapter name) or null, got ${showValue(param)}`);
  if (typeof param === 'string' && ref.adapter !== undefined && param !== ref.adapter) {
    throw new RequestError('adapter', 'conflict', `names "${param}" but model names "${ref.name}:${ref.adapter}"`);
  }
  const name = typeof param === 'string' ? param : ref.adapter;
  if (name === undefined || name === '') return null;
  if (!adapters?.has(name)) {
    const loaded = adapters?.list().map((a) => a.name) ?? [];
    const field = typeof param === 'string' ? 'adapter' : 'model';
    throw new RequestError(
      field,
      'adapter',
      `adapter "${name}" is not loaded for model "${ref.name}" (loaded: ${loaded.join(', ') || 'none'}); load it with adapters.load or models.<name>.adapters`,
    );
  }
  return adapters.get(name);
}
