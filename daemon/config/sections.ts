// Config sections owned by later parts of the daemon (engine, models, robots).
// Each is an open mapping validated minimally until its owner replaces the node here with
// its own schema (import it and assign it below); types then flow into `Config` automatically.
import { anything, obj, record } from '../util/schema.js';
import { engineProfileSchema } from './engine-profile.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
const nameRule = (k: string) => (NAME.test(k) ? undefined : `must be a name of letters, digits, "_", "." or "-"`);

export const sections = {
  /** Inference engine settings: the streaming profile every model starts from. */
  engine: obj({ profile: engineProfileSchema }, { doc: 'inference engine settings' }),
  /** Models by name: each a mapping (path, profile, adapters...). */
  models: record(record(anything()), { doc: 'models by name, each a mapping', keyRule: nameRule }),
  /** Robots by name: each a mapping (description, transport, limits...). */
  robots: record(record(anything()), { doc: 'robots by name, each a mapping', keyRule: nameRule }),
};
