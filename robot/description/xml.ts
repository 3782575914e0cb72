// A small XML reader for URDF: elements and attributes only. Text content, comments,
// processing instructions, DOCTYPE and CDATA are skipped. Errors carry a line number.
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  line: number;
}

export type XmlResult = { ok: true; root: XmlElement } | { ok: false; error: string };

const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;
const ATTRIBUTE = /\s*([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/y;
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decode(value: string): string {
  return value.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, e: string) => {
    if (e.startsWith('#x')) return String.fromCodePoint(parseInt(e.slice(2), 16));
    if (e.startsWith('#')) return String.fromCodePoint(parseInt(e.slice(1), 10));
    return ENTITIES[e] ?? m;
  });
}

export function parseXml(text: string): XmlResult {
  let pos = 0;
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  // Line numbers counted incrementally: positions only move forward.
  let counted = 0;
  let line = 1;
  const lineAt = (p: number): number => {
    for (; counted < p; counted++) if (text.charCodeAt(counted) === 10) line++;
    return line;
  };
  const fail = (p: number, what: string): XmlResult => ({ ok: false, error: `XML line ${lineAt(p)}: ${what}` });

  while (pos < text.length) {
    const lt = text.indexOf('<', pos);
    if (lt < 0) break;
    pos = lt;
    let skip = '';
    if (text.startsWith('<!--', pos)) skip = '-->';
    else if (text.startsWith('<![CDATA[', pos)) skip = ']]>';
    else if (text.startsWith('<?', pos)) skip = '?>';
    else if (text.startsWith('<!', pos)) skip = '>';
    if (skip) {
      const end = text.indexOf(skip, pos);
      if (end < 0) return fail(pos, `unterminated markup (expected "${skip}")`);
      pos = end + skip.length;
      continue;
    }
    if (text.startsWith('</', pos)) {
      NAME.lastIndex = pos + 2;
      const m = NAME.exec(text);
      const close = text.indexOf('>', pos);
      if (!m || close < 0) return fail(pos, 'malformed closing tag');
      const open = stack.pop();
      if (!open) return fail(pos, `closing tag </${m[0]}> without an open element`);
      if (open.name !== m[0])
        return fail(pos, `closing tag </${m[0]}> does not match <${open.name}> (line ${open.line})`);
      pos = close + 1;
      continue;
    }
    NAME.lastIndex = pos + 1;
    const m = NAME.exec(text);
    if (!m) return fail(pos, 'malformed tag');
    const element: XmlElement = { name: m[0], attributes: {}, children: [], line: lineAt(pos) };
    pos = NAME.lastIndex;
    for (;;) {
      ATTRIBUTE.lastIndex = pos;
      const a = ATTRIBUTE.exec(text);
      if (!a) break;
      element.attributes[a[1]] = decode(a[2] ?? a[3]);
      pos = ATTRIBUTE.lastIndex;
    }
    while (pos < text.length && /\s/.test(text[pos])) pos++;
    const selfClosing = text.startsWith('/>', pos);
    if (!selfClosing && text[pos] !== '>') return fail(pos, `malformed attribute in <${element.name}>`);
    pos += selfClosing ? 2 : 1;
    const parent = stack[stack.length - 1];
    if (parent) parent.children.push(element);
    else if (root) return fail(pos, `second root element <${element.name}>`);
    else root = element;
    if (!selfClosing) stack.push(element);
  }
  if (stack.length > 0)
    return fail(
      text.length,
      `element <${stack[stack.length - 1].name}> (line ${stack[stack.length - 1].line}) is never closed`,
    );
  if (!root) return { ok: false, error: 'XML: no root element' };
  return { ok: true, root };
}
