import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ActionSample } from '../../../daemon/policy/context/action-log.js';
import { Prng } from '../../../robot/common/prng.js';
import { thinSamples } from '../../../daemon/policy/context/align.js';
import { actionEvents, stageOf } from '../../../daemon/policy/context/events.js';
import {
  nearestFrame,
  selectKeyframes,
  thumbDistance,
  windowCandidates,
} from '../../../daemon/policy/context/keyframes.js';
import {
  type ActionEvent,
  DEFAULT_CONTEXT_OPTIONS,
  type KeyframeSelectionOptions,
} from '../../../daemon/policy/context/types.js';

const flat = (g: number) => new Uint8Array(16).fill(g);
const ev = (kind: ActionEvent['kind'], t: number): ActionEvent => ({ kind, t, arm: 'a', line: 1 });

test('event frames are kept even when they repeat a scene; candidates repeating one are dropped', () => {
  // 1 fps, 6 frames: scenes 0 0 100 100 100 200; contact at 3 s shows the same scene as candidate 2.
  const times = [0, 1, 2, 3, 4, 5];
  const thumbs = [0, 0, 100, 100, 100, 200].map(flat);
  const o = { ...DEFAULT_CONTEXT_OPTIONS, windowS: 2, strideS: 1 };
  const sel = selectKeyframes(times, thumbs, [ev('contact', 3.05)], o);
  assert.deepEqual(sel.candidates, [2, 5]);
  assert.deepEqual(
    sel.keyframes.map((k) => [k.index, k.reason, k.rank]),
    [
      [0, 'first', 0],
      [3, 'contact', 2],
      [5, 'last', 1],
    ],
  );
  assert.deepEqual(sel.dropped, [
    { index: 2, reason: 'near_duplicate', detail: 'near-duplicate of frame 3 (distance 0.0000)' },
  ]);
  // An event further than the tolerance from every frame is reported, not forced onto a frame.
  assert.deepEqual(selectKeyframes(times, thumbs, [ev('release', 3.5)], o).unaligned, [ev('release', 3.5)]);
  // One frame: it is first (and there is no separate last).
  assert.deepEqual(selectKeyframes([0], [flat(1)], [], o).keyframes, [{ index: 0, reason: 'first', rank: 0 }]);
});

test('priority under the cap: first, last, contact/release in time order, arm changes, then larger changes', () => {
  const times = Array.from({ length: 10 }, (_, i) => i);
  const thumbs = [0, 50, 50, 50, 50, 50, 50, 50, 50, 250].map(flat);
  const o = { ...DEFAULT_CONTEXT_OPTIONS, windowS: 20, strideS: 20, maxKeyframesPerVideo: 4 };
  const sel = selectKeyframes(times, thumbs, [ev('arm_change', 2), ev('release', 6), ev('contact', 4)], o);
  assert.deepEqual(
    sel.keyframes.map((k) => [k.index, k.reason]),
    [
      [0, 'first'],
      [4, 'contact'],
      [6, 'release'],
      [9, 'last'],
    ],
  );
  assert.deepEqual(
    sel.dropped.map((d) => [d.index, d.reason]),
    [[2, 'cap_per_video']],
  );
});

test('nearest frame: ties go to the earlier frame, the tolerance is inclusive', () => {
  const times = [0, 0.1, 0.2, 0.3];
  assert.equal(nearestFrame(times, 0.15, 0.1), 1);
  assert.equal(nearestFrame(times, 0.4, 0.1), 3);
  assert.equal(nearestFrame(times, 0.41, 0.1), -1);
  assert.equal(nearestFrame(times, -0.1, 0.1), 0);
  assert.equal(thumbDistance(flat(0), flat(255)), 1);
});

test('events: gripper closing = contact, opening = release; a new set of moving arms = arm_change', () => {
  const rows: [number, string, number, number?][] = [
    [0, 'L', 0, 1],
    [0, 'R', 0],
    [1, 'L', 0.1],
    [1, 'R', 0],
    [2, 'L', 0.2, 0],
    [2, 'R', 0],
    [3, 'L', 0.2],
    [3, 'R', 0.1],
    [4, 'L', 0.3],
    [4, 'R', 0.2],
    [5, 'L', 0.3, 1],
    [5, 'R', 0.2],
    [6, 'L', 0.4],
    [6, 'R', 0.2],
  ];
  const samples: ActionSample[] = rows.map(([t, arm, q, cmd], i) => ({
    line: i + 1,
    t,
    arm,
    joints: [q],
    ...(cmd === undefined ? {} : { gripperCmd: cmd }),
  }));
  const events = actionEvents(samples, 0.002);
  assert.deepEqual(
    events.map((e) => [e.kind, e.t, e.arm, e.line]),
    [
      ['contact', 2, 'L', 5],
      ['arm_change', 3, 'R', 7],
      ['arm_change', 4, 'L+R', 9],
      ['release', 5, 'L', 11],
      ['arm_change', 6, 'L', 13],
    ],
  );
  assert.deepEqual(
    [0, 1, 2, 2.5, 5, 5.5, 6].map((t) => stageOf(t, t === 0 ? 'first' : 'change', events)),
    ['start', 'approach', 'carry', 'carry', 'retreat', 'retreat', 'retreat'],
  );
  assert.equal(stageOf(3, 'change', []), 'move');
  assert.equal(stageOf(3, 'release', events), 'release');
  assert.equal(stageOf(9, 'last', events), 'end');
});

// Seeded generator (mulberry32): the same seed gives the same case.
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function keyframeCase(seed: number) {
  const r = rng(seed);
  const n = 1 + Math.floor(r() * 150);
  const times: number[] = [];
  for (let i = 0, t = r() * 3; i < n; i++, t += 0.02 + r() * 0.5) times.push(t);
  const thumbs: number[][] = [];
  let scene = Array.from({ length: 16 }, () => Math.floor(r() * 256));
  for (let i = 0; i < n; i++) {
    if (r() < 0.15) scene = Array.from({ length: 16 }, () => Math.floor(r() * 256));
    else if (r() < 0.2) scene = scene.map((v) => Math.min(255, v + Math.floor(r() * 4)));
    thumbs.push(scene);
  }
  const kinds: ActionEvent['kind'][] = ['contact', 'release', 'arm_change'];
  const tEnd = times[n - 1]!;
  const events = Array.from({ length: Math.floor(r() * 30) }, (_, k) => ({
    kind: kinds[k % 3]!,
    t: -1 + r() * (tEnd + 2),
    arm: 'a',
    line: k + 1,
  }));
  const windowS = 0.2 + r() * 5;
  const o: KeyframeSelectionOptions = {
    windowS,
    strideS: 0.1 + r() * windowS,
    minChange: r() * 0.1,
    duplicateDistance: r() * 0.1,
    maxKeyframesPerVideo: 2 + Math.floor(r() * 23),
    alignToleranceS: 0.1,
  };
  return { times, thumbs, events, o };
}

test('property (seeded): keyframes hold first and last, stay under the cap, sorted, no candidate near-duplicates a higher-ranked keyframe', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const c = keyframeCase(seed);
    const thumbs = c.thumbs.map((t) => Uint8Array.from(t));
    const where = () => `seed ${seed}: ${JSON.stringify(c)}`;
    const sel = selectKeyframes(c.times, thumbs, c.events, c.o);
    assert.deepEqual(selectKeyframes(c.times, thumbs, c.events, c.o), sel, where());
    const idx = sel.keyframes.map((k) => k.index);
    const n = c.times.length;
    assert.ok(idx[0] === 0 && idx[idx.length - 1] === n - 1, `first/last missing, ${where()}`);
    assert.ok(idx.length <= c.o.maxKeyframesPerVideo, `over the cap, ${where()}`);
    assert.ok(
      idx.every((v, i) => i === 0 || v > idx[i - 1]!),
      `not sorted/unique, ${where()}`,
    );
    assert.deepEqual(
      [...sel.keyframes.map((k) => k.rank)].sort((a, b) => a - b),
      [...idx.keys()],
      where(),
    );
    for (const k of sel.keyframes.filter((x) => x.reason === 'change'))
      for (const j of sel.keyframes.filter((x) => x.rank < k.rank))
        assert.ok(
          thumbDistance(thumbs[k.index]!, thumbs[j.index]!) >= c.o.duplicateDistance,
          `near-duplicate kept, ${where()}`,
        );
    const accounted = new Set([...idx, ...sel.dropped.map((d) => d.index)]);
    assert.ok(
      sel.candidates.every((i) => i > 0 && accounted.has(i)),
      `candidate lost, ${where()}`,
    );
    for (const e of c.events) {
      const f = nearestFrame(c.times, e.t, 0.1);
      assert.ok(f < 0 ? sel.unaligned.includes(e) : accounted.has(f), `event lost, ${where()}`);
    }
  }
});

test('property (seeded): thinning keeps each arm’s ends, both sides of command changes, one sample per period bucket', () => {
  for (let seed = 1; seed <= 200; seed++) {
    const r = rng(seed);
    const samples: ActionSample[] = [];
    let t = 0;
    const count = 1 + Math.floor(r() * 300);
    for (let i = 0; i < count; i++) {
      t += r() < 0.05 ? 1 + r() * 3 : r() * 0.2;
      samples.push({
        line: i + 1,
        t,
        arm: r() < 0.5 ? 'L' : 'R',
        gripperCmd: r() < 0.1 ? 0 : 1,
        segment: String(Math.floor(t / 7)),
      });
    }
    const o = { samplePeriodS: 0.3 + r() * 2, segmentGapS: 1 };
    const kept = new Set(thinSamples(samples, o));
    const where = `seed ${seed}: ${JSON.stringify({ o, samples })}`;
    for (const arm of ['L', 'R']) {
      const seq = samples.filter((s) => s.arm === arm);
      if (seq.length === 0) continue;
      assert.ok(kept.has(seq[0]!) && kept.has(seq[seq.length - 1]!), `ends, ${where}`);
      seq.forEach((s, i) => {
        const prev = seq[i - 1];
        if (prev && prev.gripperCmd !== s.gripperCmd)
          assert.ok(kept.has(prev) && kept.has(s), `command change, ${where}`);
      });
      // Walk segments; every occupied bucket has a kept sample.
      let start = 0;
      const buckets = new Map<string, boolean>();
      seq.forEach((s, i) => {
        const prev = seq[i - 1];
        if (!prev || prev.segment !== s.segment || s.t - prev.t > o.segmentGapS) start = s.t;
        const key = `${start}/${Math.floor((s.t - start) / o.samplePeriodS + 1e-9)}`;
        buckets.set(key, (buckets.get(key) ?? false) || kept.has(s));
      });
      assert.ok([...buckets.values()].every(Boolean), `empty bucket, ${where}`);
    }
  }
});

/** The window scan as specified: every window start from t0 by strideS up to the last frame. */
function naiveCandidates(times: number[], change: number[], o: KeyframeSelectionOptions): number[] {
  const picked = new Set<number>();
  for (let k = 0; times[0]! + k * o.strideS <= times.at(-1)! + 1e-9; k++) {
    const start = times[0]! + k * o.strideS;
    let best = -1;
    times.forEach((t, i) => {
      if (i > 0 && t >= start - 1e-9 && t < start + o.windowS - 1e-9 && change[i]! >= o.minChange)
        if (best < 0 || change[i]! > change[best]!) best = i;
    });
    if (best >= 0) picked.add(best);
  }
  return [...picked].sort((a, b) => a - b);
}

test('property (seeded): windows with no frame are skipped, picking the same candidates as the full scan', () => {
  for (let seed = 1; seed <= 300; seed++) {
    const r = new Prng(seed);
    const n = 2 + r.int(12);
    // Gappy timelines: bursts of frames separated by long empty stretches.
    const times: number[] = [r.int(5)];
    for (let i = 1; i < n; i++) times.push(times[i - 1]! + (r.int(3) === 0 ? 20 + r.int(200) : 0.1 + r.int(20) / 10));
    const change = times.map(() => r.int(100) / 100);
    const o = {
      ...DEFAULT_CONTEXT_OPTIONS,
      windowS: [0.5, 1, 2, 3.3][r.int(4)]!,
      strideS: [0.25, 1, 1.5][r.int(3)]!,
      minChange: 0.1,
    };
    assert.deepEqual(
      windowCandidates(times, change, o),
      naiveCandidates(times, change, o),
      `seed ${seed}: times ${JSON.stringify(times)} change ${JSON.stringify(change)} window ${o.windowS} stride ${o.strideS}`,
    );
  }
});

test('two frames 1e10 s apart are two windows, not 1e10 (the scan follows the frames)', () => {
  const o = { ...DEFAULT_CONTEXT_OPTIONS, windowS: 2, strideS: 1, minChange: 0 };
  assert.deepEqual(windowCandidates([0, 1e10], [0, 0.5], o), [1]);
  assert.deepEqual(windowCandidates([0, 1, 1e15, 1e15 + 0.5], [0, 0.2, 0.9, 0.3], o), [1, 2]);
});
