// Config sections owned by later parts of the daemon (engine, models, files, robots).
// Each owner defines its schema in its own module and assigns it here; types then flow into
// `Config` automatically.
import { engineSchema, filesSchema, modelsSchema } from '../engine/config.js';
import { policySchema } from '../policy/config.js';
import { robotsSchema } from '../robots/config.js';

export const sections = {
  /** Serving defaults: keep-alive, queue, threads, context, sessions, demo model (daemon/engine/config.ts). */
  engine: engineSchema,
  /** Models by name → folder and profile (daemon/engine/config.ts). */
  models: modelsSchema,
  /** Roots model and adapter files may be read from (daemon/engine/config.ts). */
  files: filesSchema,
  /** Robots served over the controller link (daemon/robots/config.ts). */
  robots: robotsSchema,
  /** Policy episodes: budget defaults, images, record retention (daemon/policy/config.ts). */
  policy: policySchema,
};
