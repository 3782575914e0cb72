// docs/cli.md and `brainstem --help` agree: the program is built from the same registrars as
// daemon/main.ts and walked; every command has a section with a table row per option that is its
// help text and default verbatim, and every command documented there exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { registrars } from '../../../daemon/cli/index.js';

// Compiled to dist/test/daemon/cli/: four levels below the repository root.
const cliDoc = fileURLToPath(new URL('../../../../docs/cli.md', import.meta.url));

function commands(): Map<string, Command> {
  const program = new Command().name('brainstem');
  for (const register of registrars) register(program);
  const found = new Map<string, Command>();
  const walk = (c: Command, path: string[]) => {
    for (const sub of c.commands) {
      const p = [...path, sub.name()];
      found.set(p.join(' '), sub);
      walk(sub, p);
    }
  };
  walk(program, []);
  return found;
}

/** Section text by command path, from headings such as "### `brainstem bench decode`". */
function documented(): Map<string, string> {
  const text = readFileSync(cliDoc, 'utf8');
  const heading = /^#{2,4} `brainstem ([a-z][\w-]*(?: [a-z][\w-]*)*)/gm;
  const marks = [...text.matchAll(heading)];
  const sections = new Map<string, string>();
  marks.forEach((m, i) => sections.set(m[1]!, text.slice(m.index, marks[i + 1]?.index ?? text.length)));
  return sections;
}

test('every CLI command has a section in docs/cli.md that names each of its options', () => {
  const docs = documented();
  for (const [path, cmd] of commands()) {
    const section = docs.get(path);
    assert.ok(section !== undefined, `docs/cli.md has no "### \`brainstem ${path}\`" section`);
    for (const option of cmd.options) {
      const flag = option.long ?? option.short!;
      assert.match(
        section,
        new RegExp(`(?<![\\w-])${flag}(?![\\w-])`),
        `docs/cli.md: brainstem ${path} does not document ${flag}`,
      );
    }
  }
});

test("every option's row in docs/cli.md is its help text and default, verbatim", () => {
  const docs = documented();
  const esc = (t: string) => t.replace(/\|/g, '\\|');
  for (const [path, cmd] of commands()) {
    const lines = docs.get(path)!.split('\n');
    for (const o of cmd.options) {
      const d = o.defaultValue as unknown;
      const none = d === undefined || d === false || (Array.isArray(d) && d.length === 0);
      const row = `| \`${esc(o.flags)}\` | ${esc(o.description)} | ${none ? '' : `\`${String(d)}\``} |`;
      const found = lines.find((l) => l.startsWith(`| \`${esc(o.flags)}\` |`));
      assert.ok(found, `docs/cli.md: brainstem ${path} has no table row for ${o.flags}`);
      assert.equal(found, row, `docs/cli.md: brainstem ${path} ${o.flags}: the row differs from the help`);
    }
  }
});

test('every command documented in docs/cli.md exists', () => {
  const known = commands();
  for (const path of documented().keys()) {
    assert.ok(known.has(path), `docs/cli.md documents "brainstem ${path}", which the CLI does not have`);
  }
});
