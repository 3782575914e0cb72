// Config sections owned by later parts of the daemon (engine, models, robots).
// Each is an open mapping validated minimally until its owner replaces the node here with
// its own schema (import it and assign it below); types then flow into `Config` automatically.
import { engineSchema, modelsSchema } from '../engine/config.js';
import { anything, record } from '../util/schema.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const nameRule = (k: string) => (NAME.test(k) ? undefined : `must be a name of letters, digits, "_", "." or "-"`);

export const sections = {
  /** Serving defaults: keep-alive, queue, threads, context, sessions, demo model (daemon/engine/config.ts). */
  engine: engineSchema,
  /** Models by name → folder and profile (daemon/engine/config.ts). */
  models: modelsSchema,
  /** Robots by name: each a mapping (description, transport, limits...). */
  robots: record(record(anything()), { doc: 'robots by name, each a mapping', keyRule: nameRule }),
};
