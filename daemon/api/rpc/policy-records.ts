// Episode records on disk, of this daemon run and earlier ones: policy.records lists them (newest
// first), policy.record reads one (episode.json and its events), policy.image returns one of its
// observation images as a data URL (the console's timeline thumbnails). Reads are asynchronous,
// and events come a page at a time (event-page.ts): a long record is hundreds of MB.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { int, obj, str } from '../../../robot/common/validation/builders.js';
import { pageParams, readEventPage } from '../../policy/episode/event-page.js';
import { EPISODE_ID, episodesDir } from '../../policy/episode/records.js';
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';

// d<decision>-<camera>.<ext>; camera names may hold dots (protocol-schemas), never a path.
const IMAGE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\.(jpg|png)$/;

const notFound = (field: string, message: string) =>
  new RpcError(RpcCode.INVALID_PARAMS, `Invalid params: ${field}: ${message}`, { field, rule: 'must name a record' });

async function readJson(file: string): Promise<Record<string, unknown> | null> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  } catch {
    return null;
  }
}

export function registerPolicyRecordMethods(rpc: RpcRegistry, dataDir: string): void {
  const root = episodesDir(dataDir);
  const id = str({
    doc: 'episode id (ep-YYYYMMDD-HHMMSS-xxxxxx)',
    rule: (s) => (EPISODE_ID.test(s) ? undefined : 'must look like ep-20260101-120000-abcdef'),
  });
  const dir = (i: string) => join(root, i);

  rpc.register(
    'policy.records',
    obj({ limit: int({ min: 1, max: 1000, default: 50, doc: 'most records, newest first' }) }),
    async ({ limit }) => {
      const names = await readdir(root).catch(() => [] as string[]);
      const ids = names
        .filter((n) => EPISODE_ID.test(n))
        .sort()
        .reverse()
        .slice(0, limit);
      const episodes = [];
      for (const i of ids) {
        const e = await readJson(join(dir(i), 'episode.json'));
        if (e) episodes.push({ ...e, id: i });
      }
      return { episodes };
    },
    'recorded episodes of this and earlier daemon runs, newest first: each episode.json (request, end state, budget used)',
  );

  rpc.register(
    'policy.record',
    obj({ id, ...pageParams }),
    async ({ id: i, ...paging }) => {
      const episode = await readJson(join(dir(i), 'episode.json'));
      if (!episode) throw notFound('id', `no record of episode ${i}`);
      return { id: i, episode, ...(await readEventPage(join(dir(i), 'events.jsonl'), paging)) };
    },
    'one recorded episode: its episode.json and a page of its events (next_after_seq when more follow)',
  );

  rpc.register(
    'policy.image',
    obj({
      id,
      image: str({
        doc: 'an image id of an observation event',
        rule: (s) => (IMAGE_NAME.test(s) ? undefined : 'must be an image file name such as d1-front.jpg'),
      }),
    }),
    async ({ id: i, image }) => {
      const bytes = await readFile(join(dir(i), 'images', image)).catch(() => null);
      if (!bytes) throw notFound('image', `episode ${i} has no image ${image}`);
      const mime = image.endsWith('.png') ? 'image/png' : 'image/jpeg';
      return { id: i, image, data_url: `data:${mime};base64,${bytes.toString('base64')}` };
    },
    'an observation image of a recorded episode as a data URL',
  );
}
