// The JSON examples of docs/protocol.md are messages the validators accept: each complete example
// is validated as the message of its section; the ones that elide parts ("...") are listed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../../../daemon/util/repo-root.js';
import { validateMessage, type MessageBySuffix } from '../../../robot/link/protocol-validate.js';
import { formatIssue } from '../../../robot/common/validation/issue.js';

const KIND_BY_SECTION: Record<string, keyof MessageBySuffix> = {
  '### state': 'state',
  '### event': 'events',
  '## Simulator ground truth': 'sim_scene',
};

test('the complete JSON examples of protocol.md validate as their sections’ messages', () => {
  const text = readFileSync(join(repoRoot, 'docs', 'protocol.md'), 'utf8');
  let section = '';
  const checked: string[] = [];
  const elided: string[] = [];
  for (const block of text.split(/^```/m).map((b, i) => ({ b, i }))) {
    if (block.i % 2 === 0) {
      section = [...block.b.matchAll(/^#+ .+$/gm)].at(-1)?.[0] ?? section;
      continue;
    }
    if (!block.b.startsWith('json\n')) continue;
    const body = block.b.slice('json\n'.length);
    if (body.includes('...')) {
      elided.push(section);
      continue;
    }
    const kind = KIND_BY_SECTION[section];
    assert.ok(kind, `a complete example under "${section}" has no message kind to check it as`);
    const r = validateMessage(kind, JSON.parse(body));
    assert.ok(r.ok, `${section}: ${r.ok ? '' : r.issues.map((i) => formatIssue(i)).join('; ')}`);
    checked.push(section);
  }
  assert.deepEqual(checked, ['### state', '### event', '## Simulator ground truth']);
  assert.deepEqual(elided, ['### description', '### trajectory', '## Over WebSocket']);
});
