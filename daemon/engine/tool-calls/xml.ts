// Qwen3-Coder / Qwen3.5 tool calls:
// `<function=NAME>\n<parameter=P>\nvalue\n</parameter>\n</function>`, inside `<tool_call>` or bare.
// Values are text; one newline after the opening and before the closing parameter tag is layout.
import { showValue } from '../../../robot/common/validation/values.js';
import { ToolCallError } from './errors.js';

export interface XmlCall {
  name: string;
  params: Array<[string, string]>;
}

const FN_OPEN = '<function=';
const FN_CLOSE = '</function>';
const P_OPEN = '<parameter=';
const P_CLOSE = '</parameter>';

/** Parses exactly one `<function=...>...</function>` (surrounding whitespace allowed). */
export function parseXmlFunction(body: string, raw: string): XmlCall {
  let s = body.trim();
  if (!s.startsWith(FN_OPEN))
    throw new ToolCallError('invalid_call', `expected <function=NAME>, got ${showValue(s.slice(0, 40))}`, raw);
  const nameEnd = s.indexOf('>');
  const name = nameEnd < 0 ? '' : s.slice(FN_OPEN.length, nameEnd).trim();
  if (nameEnd < 0 || name === '' || name.includes('<') || name.includes('\n')) {
    throw new ToolCallError('invalid_call', `malformed function tag ${showValue(s.slice(0, 60))}`, raw);
  }
  s = s.slice(nameEnd + 1);
  const params: Array<[string, string]> = [];
  for (;;) {
    s = s.trimStart();
    if (s.startsWith(FN_CLOSE)) {
      const after = s.slice(FN_CLOSE.length).trim();
      if (after !== '')
        throw new ToolCallError(
          'invalid_call',
          `unexpected text after </function> of ${name}: ${showValue(after)}`,
          raw,
          name,
        );
      return { name, params };
    }
    if (s === '')
      throw new ToolCallError('unclosed_tag', `<function=${name}> is never closed by </function>`, raw, name);
    if (!s.startsWith(P_OPEN))
      throw new ToolCallError(
        'invalid_call',
        `unexpected text inside <function=${name}>: ${showValue(s.slice(0, 40))}`,
        raw,
        name,
      );
    const tagEnd = s.indexOf('>');
    const param = tagEnd < 0 ? '' : s.slice(P_OPEN.length, tagEnd).trim();
    if (tagEnd < 0 || param === '' || param.includes('<') || param.includes('\n')) {
      throw new ToolCallError(
        'invalid_call',
        `malformed parameter tag in ${name}: ${showValue(s.slice(0, 60))}`,
        raw,
        name,
      );
    }
    const close = s.indexOf(P_CLOSE, tagEnd + 1);
    if (close < 0)
      throw new ToolCallError(
        'unclosed_tag',
        `<parameter=${param}> of ${name} is never closed by </parameter>`,
        raw,
        name,
      );
    let value = s.slice(tagEnd + 1, close);
    if (value.startsWith('\n')) value = value.slice(1);
    if (value.endsWith('\n')) value = value.slice(0, -1);
    if (params.some(([p]) => p === param))
      throw new ToolCallError('invalid_arguments', `parameter ${param} of ${name} is given twice`, raw, name);
    params.push([param, value]);
    s = s.slice(close + P_CLOSE.length);
  }
}
