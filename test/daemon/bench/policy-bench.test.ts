// bench policy on a tiny synthetic model: one row per decision with its token counts and times,
// the warm decisions prefill no more than their new tokens (counts, not times), and the CLI
// refuses a missing model or another provider.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runPolicyBench, type DecisionRow } from '../../../daemon/bench/policy-bench.js';
import { runCli } from '../../helpers/daemon.js';
import { synthTiny } from '../../helpers/serving.js';
import { tempDir } from '../../helpers/temp.js';

test('bench policy: a row per decision; warm decisions prefill only their new tokens', async (t) => {
  const model = await synthTiny(4);
  const data = tempDir('bs-bench-policy-');
  t.after(() => [model, data].forEach((d) => d.remove()));
  const r = await runPolicyBench({
    dataDir: data.path,
    model: model.path,
    decisions: 3,
    threads: 1,
    contextLength: 8192,
  });
  const rows = r.rows as DecisionRow[];
  assert.equal(rows.length, 3);
  assert.equal(r.decisions, 3);
  for (const row of rows) {
    assert.ok(row.prompt_tokens > 0 && row.decode_tokens > 0, JSON.stringify(row));
    assert.ok(row.prefilled_tokens <= row.prompt_tokens);
    for (const k of ['time_to_request_ms', 'prefill_ms', 'decode_ms', 'cycle_ms', 'prompt_ms', 'chat_ms'] as const)
      assert.equal(typeof row[k], 'number', k);
  }
  const warm = rows.filter((x) => x.decision > 1 && !x.compacted);
  assert.equal(r.warm_decisions, warm.length);
  for (const w of warm) assert.ok(w.prefilled_tokens <= w.new_tokens + 32, JSON.stringify(w));

  const other = await runCli(['bench', 'policy', '--provider', 'openai', '--model', model.path]);
  assert.equal(other.code, 2);
  assert.match(other.stderr, /--provider: only local is benchmarked, got "openai"/);
  const none = await runCli(['bench', 'policy']);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--model: is required/);
});
