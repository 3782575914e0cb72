// The JSON-RPC methods the console reads besides the existing ones: robots.describe (chains,
// capsules, limits), robots.plans (the last trajectory per arm), system.metrics, and the episode
// records of earlier runs (policy.records, policy.record, policy.image).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestDaemon, TEST_TOKEN } from '../../helpers/daemon.js';
import { RpcTestClient } from '../../helpers/rpc.js';

test('console RPCs on a daemon serving arm1 (yam) and duo (dual-yam) without controllers', async (t) => {
  const d = await startTestDaemon({
    robots: {
      serve: [
        { id: 'arm1', robot: 'yam', transport: 'mqtt' },
        { id: 'duo', robot: 'dual-yam', transport: 'mqtt' },
      ],
    },
  });
  const rpc = await RpcTestClient.connect(d.ws, TEST_TOKEN);
  t.after(async () => {
    await rpc.close();
    await d.stop();
  });

  await t.test('robots.describe: each arm with its base, joints (origin, axis, limits) and capsules', async () => {
    const r = (await rpc.call('robots.describe', { robot: 'duo' })).result;
    assert.equal(r.kind, 'setup');
    assert.equal(r.description, 'Two I2RT YAM arms, shared world frame');
    const listed = (await rpc.call('robots.list')).result.robots;
    assert.deepEqual(
      listed.map((x: any) => x.description),
      ['I2RT YAM, 6 joints, linear gripper', 'Two I2RT YAM arms, shared world frame'],
    );
    assert.deepEqual(
      r.arms.map((a: any) => a.name),
      ['left', 'right'],
    );
    const left = r.arms[0];
    assert.equal(left.base.length, 12);
    assert.equal(left.joints.length, 6);
    for (const j of left.joints) {
      assert.equal(j.origin.length, 12);
      assert.equal(j.axis.length, 3);
      assert.ok(j.limits.velocity > 0);
    }
    assert.ok(left.capsules.length >= 6);
    assert.ok(left.capsules.every((c: any) => left.links.some((l: any) => l.name === c.link)));
    assert.equal(r.scene, null, 'no simulator has announced a scene');
    assert.notDeepEqual(r.arms[0].base, r.arms[1].base);
    const bad = await rpc.call('robots.describe', { robot: 'nope' });
    assert.equal(bad.error!.code, -32602);
    assert.match(bad.error!.message, /served: arm1, duo/);
  });

  await t.test('robots.plans: empty before any trajectory; thinned to max_points once one is sent', async () => {
    const empty = (await rpc.call('robots.plans', { robot: 'arm1' })).result;
    assert.deepEqual(empty, { robot: 'arm1', controller_time: null, plans: {} });
    const points = Array.from({ length: 1001 }, (_, i) => ({ t: i * 0.01, q: [i, 0, 0, 0, 0, 0] }));
    d.robots.robot('arm1')!.plans.set('arm', {
      msg: { v: 1, id: 't-1', arm: 'arm', joints: ['j1'], time: 1, start_time: 5, expires_at: 6, points },
      at: d.robots.now(),
    });
    const r = (await rpc.call('robots.plans', { robot: 'arm1', max_points: 100 })).result.plans.arm;
    assert.equal(r.id, 't-1');
    assert.equal(r.start_time, 5);
    assert.equal(r.duration_s, 10);
    assert.ok(r.points.length <= 100, `${r.points.length} points`);
    assert.deepEqual(r.points[0], points[0]);
    assert.deepEqual(r.points.at(-1), points.at(-1));
  });

  await t.test('system.metrics: brainstem_* counters and gauges as JSON, no histograms', async () => {
    const r = (await rpc.call('system.metrics')).result;
    assert.equal(typeof r.time, 'number');
    const names = r.metrics.map((m: any) => m.name);
    assert.ok(names.includes('brainstem_rpc_requests_total'));
    assert.ok(names.every((n: string) => n.startsWith('brainstem_')));
    assert.ok(!names.includes('brainstem_time_to_first_token_seconds'));
    const ws = r.metrics.find((m: any) => m.name === 'brainstem_ws_connections');
    assert.ok(ws.values[0].value >= 1);
  });

  await t.test('policy.records / record / image read the records of earlier runs', async () => {
    const id = 'ep-20250101-120000-abcdef';
    const dir = join(d.dataDir, 'episodes', id);
    mkdirSync(join(dir, 'images'), { recursive: true });
    writeFileSync(join(dir, 'episode.json'), JSON.stringify({ id, robot: 'arm1', instruction: 'old', state: 'done' }));
    const events = [
      { episode: id, seq: 0, t: 0, type: 'started' },
      { episode: id, seq: 1, t: 0.1, type: 'observation', images: ['d1-front.jpg'] },
    ];
    writeFileSync(join(dir, 'events.jsonl'), events.map((e) => JSON.stringify(e)).join('\n') + '\n');
    writeFileSync(join(dir, 'images', 'd1-front.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
    const list = (await rpc.call('policy.records')).result.episodes;
    assert.deepEqual(list, [{ id, robot: 'arm1', instruction: 'old', state: 'done' }]);
    const rec = (await rpc.call('policy.record', { id })).result;
    assert.deepEqual(rec.events, events);
    const img = (await rpc.call('policy.image', { id, image: 'd1-front.jpg' })).result;
    assert.equal(img.data_url, 'data:image/jpeg;base64,/9j/2Q==');
    // Camera names may hold dots: their images are readable too.
    writeFileSync(join(dir, 'images', 'd1-cam.left.jpg'), Buffer.from([0xff, 0xd8, 0xff, 0xd9]));
    assert.equal((await rpc.call('policy.image', { id, image: 'd1-cam.left.jpg' })).result.data_url, img.data_url);
    const outside = await rpc.call('policy.image', { id, image: '../episode.json' });
    assert.equal(outside.error!.code, -32602);
    assert.equal(outside.error!.data.field, 'image');
    const missing = await rpc.call('policy.record', { id: 'ep-20250101-120000-000000' });
    assert.match(missing.error!.message, /no record of episode/);
    // A line cut off (a crash while it was appended) is left out and counted, not an internal error.
    writeFileSync(join(dir, 'events.jsonl'), `${JSON.stringify(events[0])}\n{"episode": "${id}", "seq": 1, "t"`);
    const cut = await rpc.call('policy.record', { id });
    assert.deepEqual([cut.result.events, cut.result.damaged_lines], [[events[0]], 1], JSON.stringify(cut));
  });
});
