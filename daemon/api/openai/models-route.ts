// GET /v1/models and GET /v1/models/{model}: the configured models in OpenAI's list shape, with
// brainstem's load state alongside (loaded or not: any configured model can be requested), and
// each model's LoRA adapters as "model:adapter" entries (the name a request uses).
import { statSync } from 'node:fs';
import type { ModelRegistry, ModelStatus } from '../../engine/model-registry.js';
import { HttpError, sendJson } from '../http.js';
import type { HttpRoutes } from '../routes.js';
import { toHttpError } from '../serving-errors.js';

function modelJson(s: ModelStatus) {
  let created = 0;
  try {
    created = Math.floor(statSync(s.path).mtimeMs / 1000);
  } catch {
    // a folder that is not there yet (or not mounted) still lists; loading it reports why
  }
  return {
    id: s.name,
    object: 'model',
    created,
    owned_by: 'brainstem',
    state: s.state,
    context_length: s.profile.context_length || null,
  };
}

/** The model followed by its adapters, each as "model:adapter" with `parent` = the model. */
function withAdapters(s: ModelStatus) {
  const base = modelJson(s);
  return [
    base,
    ...s.adapters.map((a) => ({ ...base, id: `${s.name}:${a.name}`, parent: s.name, adapter_loaded: a.loaded })),
  ];
}

export function registerModelRoutes(routes: HttpRoutes, registry: ModelRegistry): void {
  routes.add({
    method: 'GET',
    path: '/v1/models',
    handler: (_req, res) => sendJson(res, 200, { object: 'list', data: registry.statuses().flatMap(withAdapters) }),
  });
  routes.add({
    method: 'GET',
    path: '/v1/models/:model',
    handler: (_req, res, ctx) => {
      const id = ctx.params.model!;
      let entry;
      try {
        entry = withAdapters(registry.statusOf(id.split(':')[0]!)).find((m) => m.id === id);
      } catch (err) {
        throw toHttpError(err);
      }
      if (!entry)
        throw new HttpError(404, `model "${id}": no such adapter of that model`, 'invalid_request_error', 'model', {
          code: 'model_not_found',
        });
      sendJson(res, 200, entry);
    },
  });
}
