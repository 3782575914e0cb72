// GET /v1/models and GET /v1/models/{model}: the configured models in OpenAI's list shape, with
// brainstem's load state alongside (loaded or not: any configured model can be requested).
import { statSync } from 'node:fs';
import type { ModelRegistry, ModelStatus } from '../../engine/model-registry.js';
import { sendJson } from '../http.js';
import type { HttpRoutes } from '../routes.js';
import { toHttpError } from '../serving-errors.js';

function modelJson(s: ModelStatus) {
  let created = 0;
  try {
    created = Math.floor(statSync(s.path).mtimeMs / 1000);
  } catch {
    // a folder that is not there yet (or not mounted) still lists; loading it reports why
  }
  return { id: s.name, object: 'model', created, owned_by: 'brainstem', state: s.state, context_length: s.profile.context_length || null };
}

export function registerModelRoutes(routes: HttpRoutes, registry: ModelRegistry): void {
  routes.add({
    method: 'GET',
    path: '/v1/models',
    handler: (_req, res) => sendJson(res, 200, { object: 'list', data: registry.statuses().map(modelJson) }),
  });
  routes.add({
    method: 'GET',
    path: '/v1/models/:model',
    handler: (_req, res, ctx) => {
      try {
        sendJson(res, 200, modelJson(registry.statusOf(ctx.params.model!)));
      } catch (err) {
        throw toHttpError(err);
      }
    },
  });
}
