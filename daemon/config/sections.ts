// Config sections owned by later parts of the daemon (engine, models, robots).
// Each is an open mapping validated minimally until its owner replaces the node here with
// its own schema (import it and assign it below); types then flow into `Config` automatically.
import { robotsSchema } from '../robots/config.js';
import { anything, record, type Node } from '../util/schema.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const nameRule = (k: string) => (NAME.test(k) ? undefined : `must be a name of letters, digits, "_", "." or "-"`);

export const sections = {
  /** Inference engine settings (executor path, memory budget, threads...). */
  engine: record(anything(), { doc: 'inference engine settings (filled by the engine)' }) as Node<Record<string, unknown>>,
  /** Models by name: each a mapping (path, profile, adapters...). */
  models: record(record(anything()), { doc: 'models by name, each a mapping', keyRule: nameRule }),
  /** Robots served over the controller link (daemon/robots/config.ts). */
  robots: robotsSchema,
};
