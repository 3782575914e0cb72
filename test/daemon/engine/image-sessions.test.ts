// Seeded random sessions on the vision-language models: text prefills, image appends (with their
// 3-D positions, DeepStack features where the model takes them), decode steps and truncations to
// any row, in any order. After every call the logits must equal a fresh session's over the whole
// history at once, with every row's position stated, so the session's kept positions, position
// shift and (qwen3_5_moe) the replay of image rows from its snapshots are checked against the rule
// itself: text continues at 1 + the largest position so far; an image grid at base b puts row r,
// column c at (b, b + r, b + c).
import { test } from 'node:test';
import { NativeModel } from '../../../daemon/engine/native-model.js';
import type { MultimodalPrefill } from '../../../daemon/native/binding.js';
import { Prng } from '../../../robot/common/prng.js';
import { synthTemp } from '../../native/helpers/model-files.js';
import { assertClose } from './logits-compare.js';

const PAD = 612;
const STEPS = 36;
const MAX_ROWS = 40;

interface Row {
  token: number;
  pos: [number, number, number];
  /** Row of the image features (embeds, DeepStack) this row takes; absent: text. */
  image?: number;
}

/** One append's input: tokens, and its image rows' features and every row's positions. */
function input(rows: Row[], feats: Float32Array[], deep: number, H: number): [number[], MultimodalPrefill?] {
  const images = rows.flatMap((r, i) => (r.image === undefined ? [] : [[i, r.image] as const]));
  const tokens = rows.map((r) => r.token);
  if (images.length === 0 && rows.every((r) => r.pos[0] === r.pos[1] && r.pos[1] === r.pos[2])) {
    // Plain text: the engine places it after the largest position so far.
    return [tokens];
  }
  const embeds = new Float32Array(images.length * H);
  const deepstack = new Float32Array(deep * images.length * H);
  images.forEach(([, f], j) => {
    embeds.set(feats[f]!.subarray(0, H), j * H);
    for (let l = 0; l < deep; l++)
      deepstack.set(feats[f]!.subarray((l + 1) * H, (l + 2) * H), (l * images.length + j) * H);
  });
  const positions = Int32Array.from([0, 1, 2].flatMap((a) => rows.map((r) => r.pos[a]!)));
  return [
    tokens,
    { embeds, rows: Int32Array.from(images.map(([i]) => i)), ...(deep > 0 ? { deepstack } : {}), positions },
  ];
}

const CASES = [
  { arch: 'qwen3_5_moe', seed: 21, deep: 0, chunk: 4 },
  { arch: 'qwen3_5_moe', seed: 22, deep: 0, chunk: 512 },
  { arch: 'qwen3_vl_moe', seed: 23, deep: 2, chunk: 4 },
] as const;

for (const { arch, seed, deep, chunk } of CASES) {
  test(`${arch} (prefill chunk ${chunk}): random text, image, decode and truncate calls equal one fresh prefill (seed ${seed})`, async (t) => {
    const dir = synthTemp(t, { arch, seed: 3 });
    const model = await NativeModel.load(dir, { threads: 2, activationBits: 24, prefillChunk: chunk });
    t.after(() => model.dispose());
    const H = model.summary.hiddenSize;
    const rng = new Prng(seed);
    const feats: Float32Array[] = [];
    const history: Row[] = [];
    const log: string[] = [];
    const next = () => (history.length ? Math.max(...history.flatMap((r) => r.pos)) + 1 : 0);
    const text = (n: number, at: number): Row[] =>
      Array.from({ length: n }, (_, i) => ({ token: 1 + rng.int(500), pos: [at + i, at + i, at + i] }));
    const s = await model.createSession();
    for (let step = 0; step < STEPS; step++) {
      const op = history.length >= MAX_ROWS ? 3 : rng.int(history.length ? 4 : 2);
      let rows: Row[] = [];
      if (op === 0) {
        rows = text(1 + rng.int(5), next());
      } else if (op === 1) {
        const before = text(rng.int(3), next());
        const base = next() + before.length;
        const gh = 1 + rng.int(2);
        const gw = 1 + rng.int(3);
        const grid: Row[] = [];
        for (let r = 0; r < gh; r++) {
          for (let c = 0; c < gw; c++) {
            feats.push(Float32Array.from({ length: (deep + 1) * H }, () => rng.uniform(-1, 1)));
            grid.push({ token: PAD, pos: [base, base + r, base + c], image: feats.length - 1 });
          }
        }
        rows = [...before, ...grid, ...text(rng.int(3), base + Math.max(gh, gw))];
      } else if (op === 2) {
        rows = text(1, next());
      } else {
        const keep = rng.int(history.length + 1);
        log.push(`truncate(${keep})`);
        await s.truncate(keep);
        history.length = keep;
        continue;
      }
      log.push(
        `${op === 2 ? 'decode' : 'prefill'} ${JSON.stringify(rows.map((r) => (r.image === undefined ? r.token : `img${r.pos.join(',')}`)))}`,
      );
      const [tokens, mm] = input(rows, feats, deep, H);
      const got = op === 2 ? await s.decode(tokens[0]!) : await s.prefill(tokens, mm);
      history.push(...rows);
      const [all, allMm] = input(history, feats, deep, H);
      const fresh = await model.createSession();
      const want = await fresh.prefill(all, allMm);
      fresh.dispose();
      assertClose(got, want, `seed ${seed}, after ${log.join('; ')}`, 1e-4);
    }
    s.dispose();
  });
}
