// The policy.* JSON-RPC methods: start an episode (its events stream to the caller as
// policy.event notifications), stop, pause, resume, operator feedback and confirmation, list, get.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { anything, bool, int, list, obj, optional, str } from '../../../robot/common/validation/builders.js';
import { pageParams, readEventPage } from '../../policy/episode/event-page.js';
import { checkParams, providerParams } from '../../policy/episode/provider-spec.js';
import { PolicyRequestError, type PolicyService } from '../../policy/episode/service.js';
import { isFinal } from '../../policy/episode/types.js';
import type { ContentPart } from '../../policy/providers/types.js';
import { DEFAULT_VISION } from '../../vision/config.js';
import { checkDataUrl, checkPixels, ImageError, type ImageLimits, imageHeader } from '../../vision/image-input.js';
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';

export const EVENT_NOTIFICATION = 'policy.event';

const invalid = (err: unknown): never => {
  if (err instanceof PolicyRequestError)
    throw new RpcError(RpcCode.INVALID_PARAMS, `Invalid params: ${err.message}`, { field: err.field });
  throw err;
};

const refused = (field: string, rule: string, message: string): RpcError =>
  new RpcError(RpcCode.INVALID_PARAMS, `Invalid params: ${field}: ${message}`, { field, rule });

/** Reference images are held to engine.vision's limits as chat image parts are, by the same check
 *  (count, data URL, base64, max_image_bytes, MIME, header pixels), and must be readable. */
async function checkReferenceImages(refs: readonly { image_url?: string }[], limits: ImageLimits): Promise<void> {
  const images = [...refs.entries()].filter(([, r]) => r.image_url !== undefined);
  if (images.length > limits.maxImages)
    throw refused(
      'context.references',
      'max_images',
      `${images.length} images, more than engine.vision.max_images ${limits.maxImages}`,
    );
  for (const [i, r] of images) {
    try {
      const { bytes, mime } = checkDataUrl(r.image_url, limits);
      // The header's own size, also where checkDataUrl's reader does not understand it.
      checkPixels(await imageHeader(bytes, mime), limits.maxInputPixels);
    } catch (err) {
      if (!(err instanceof ImageError)) throw err;
      throw refused(`context.references[${i}].image_url`, err.rule, err.message);
    }
  }
}

/** `imageLimits`: engine.vision's, which reference images are held to. */
export function registerPolicyMethods(
  rpc: RpcRegistry,
  policy: PolicyService,
  imageLimits: ImageLimits = DEFAULT_VISION.limits,
): void {
  const id = str({ nonEmpty: true, doc: 'episode id (policy.start, policy.list)' });
  const episode = (i: string) => {
    try {
      return policy.episode(i);
    } catch (err) {
      return invalid(err);
    }
  };
  // Operator controls of an episode that has ended would only rewrite its record.
  const running = (i: string) => {
    const e = episode(i);
    if (isFinal(e.state))
      throw new RpcError(RpcCode.INVALID_PARAMS, `Invalid params: id: episode ${i} has ended (state ${e.state})`, {
        field: 'id',
        rule: 'running',
      });
    return e;
  };

  rpc.register(
    'policy.start',
    obj({
      robot: str({ nonEmpty: true, doc: 'robot id (robots.list)' }),
      instruction: str({ nonEmpty: true, doc: 'the task, in words' }),
      provider: providerParams,
      check: optional(checkParams),
      budget: optional(
        obj({
          decisions: optional(int({ min: 1, max: 100_000 })),
          wall_s: optional(int({ min: 1, max: 86_400 })),
          prompt_tokens: optional(int({ min: 0 })),
          completion_tokens: optional(int({ min: 0 })),
        }),
      ),
      context: optional(
        obj({
          references: optional(
            list(
              obj(
                {
                  text: optional(str()),
                  image_url: optional(str({ nonEmpty: true, doc: 'a data:image/...;base64, URL' })),
                  label: optional(str()),
                },
                {
                  refine: (r, path, issues) => {
                    if ((r.text === undefined) === (r.image_url === undefined))
                      issues.push({ path, rule: 'must have exactly one of text and image_url', value: r });
                    else if (r.label !== undefined && r.text !== undefined)
                      issues.push({ path: `${path}.label`, rule: 'labels an image_url only', value: r.label });
                  },
                },
              ),
              { maxItems: 200, doc: 'text and images the model sees first, never trimmed' },
            ),
          ),
          goals: optional(
            anything('goal images by file path, compiled in the daemon (docs/policy.md, Context compiler)'),
          ),
          demonstrations: optional(
            anything('demonstrations (videos, frame folders, action logs) by file path, compiled in the daemon'),
          ),
        }),
      ),
      detach: bool({ default: false, doc: 'keep running when this connection closes (default: the episode stops)' }),
    }),
    async (p, ctx) => {
      await checkReferenceImages(p.context?.references ?? [], imageLimits);
      const references = p.context?.references?.map(
        (r, i): ContentPart =>
          r.image_url !== undefined
            ? { type: 'image', image: { url: r.image_url }, label: r.label ?? `reference ${i + 1}` }
            : { type: 'text', text: r.text ?? '' },
      );
      const c = p.context;
      // File paths are compiled by the service, read only inside policy.context_roots.
      const files =
        c && (c.goals !== undefined || c.demonstrations !== undefined)
          ? {
              ...(c.goals !== undefined ? { goals: c.goals } : {}),
              ...(c.demonstrations !== undefined ? { demonstrations: c.demonstrations } : {}),
            }
          : undefined;
      const started = await policy
        .startEpisode(
          {
            robot: p.robot,
            instruction: p.instruction,
            provider: p.provider,
            ...(p.check ? { check: p.check } : {}),
            ...(p.budget ? { budget: p.budget } : {}),
            ...(references ? { references } : {}),
            ...(files ? { context: files } : {}),
          },
          (e) => ctx.notify(EVENT_NOTIFICATION, e),
        )
        .catch(invalid);
      if (!p.detach) {
        // The hook goes with the episode's end: a long-lived connection keeps none per ended episode.
        const unhook = ctx.onClose(() => policy.stopIfRunning(started, 'client_disconnected'));
        void policy.episode(started).finished.then(unhook);
      }
      return { id: started, notification: EVENT_NOTIFICATION };
    },
    `starts an episode; ${EVENT_NOTIFICATION} notifications stream its events to this connection; unless detach, closing the connection stops it`,
  );

  rpc.register(
    'policy.stop',
    obj({ id }),
    async ({ id: i }) => {
      const state = await episode(i).stop('operator');
      return { id: i, state, summary: policy.summary(i) };
    },
    'stops an episode (the arm is brought to rest); the result comes once it has ended',
  );
  rpc.register(
    'policy.pause',
    obj({ id }),
    ({ id: i }) => {
      running(i).operator.pause();
      return policy.summary(i);
    },
    'pauses an episode before its next decision (the running call finishes)',
  );
  rpc.register(
    'policy.resume',
    obj({ id }),
    ({ id: i }) => {
      running(i).operator.resume();
      return policy.summary(i);
    },
    'resumes a paused episode',
  );
  rpc.register(
    'policy.feedback',
    obj({ id, text: str({ nonEmpty: true, doc: 'operator words for the model' }) }),
    ({ id: i, text }) => {
      running(i).operator.addFeedback(text);
      return { id: i, queued: true };
    },
    'operator words that lead the next observation, marked as operator feedback',
  );
  rpc.register(
    'policy.confirm',
    obj({ id, complete: bool({ doc: 'the claimed done is true' }), reason: optional(str()) }),
    ({ id: i, complete, reason }) => {
      if (!episode(i).operator.confirm(complete, reason))
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: id: episode ${i} is not waiting for an operator confirmation (state ${episode(i).state})`,
          { field: 'id' },
        );
      return { id: i, complete };
    },
    'answers the operator check of a pending done',
  );
  // Watches live on their connection: `${connection}/${episode}` → unwatch. One per pair, so a
  // repeat watch (a page re-listing after a reconnect) does not send each event twice.
  const watches = new Map<string, () => void>();
  rpc.register(
    'policy.watch',
    obj({ id }),
    ({ id: i }, ctx) => {
      episode(i);
      const key = `${ctx.connectionId}/${i}`;
      if (!watches.has(key)) {
        const unlisten = policy.listen(i, (e) => ctx.notify(EVENT_NOTIFICATION, e));
        let unhook: () => void = () => undefined;
        const unwatch = () => {
          unlisten();
          unhook();
          watches.delete(key);
        };
        watches.set(key, unwatch);
        unhook = ctx.onClose(unwatch);
      }
      return { ...policy.summary(i), notification: EVENT_NOTIFICATION };
    },
    `streams an episode's further events to this connection as ${EVENT_NOTIFICATION} notifications until policy.unwatch or it closes; watching again changes nothing`,
  );
  rpc.register(
    'policy.unwatch',
    obj({ id }),
    ({ id: i }, ctx) => {
      const unwatch = watches.get(`${ctx.connectionId}/${i}`);
      if (!unwatch)
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: id: is not an episode this connection watches (policy.watch), got ${JSON.stringify(i)}`,
          { field: 'id', rule: 'must be watched by this connection' },
        );
      unwatch();
      return { id: i, watching: false };
    },
    'ends a policy.watch of this connection (the episode runs on)',
  );
  rpc.register(
    'policy.list',
    obj({}),
    () => ({ episodes: policy.list() }),
    'episodes of this daemon run, with state and budget used',
  );
  rpc.register(
    'policy.get',
    obj({ id, events: bool({ default: false, doc: 'include a page of the recorded events' }), ...pageParams }),
    async ({ id: i, events, ...paging }) => {
      episode(i);
      const record = policy.recordDir(i);
      if (events && !existsSync(record))
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: id: the record of episode ${i} is gone (removed by the retention of policy.records)`,
          { field: 'id', rule: 'recorded' },
        );
      const summary = policy.summary(i); // before the read: the episode may be forgotten meanwhile
      const page = events ? await readEventPage(join(record, 'events.jsonl'), paging) : {};
      return { ...summary, record, ...page };
    },
    'one episode: state, budget used, record folder, and a page of its events when asked (next_after_seq when more follow)',
  );
}
