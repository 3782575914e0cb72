// JSON text in the layout chat templates and Hermes tool calls use (Python's json.dumps with
// ensure_ascii=False): `{"a": 1, "b": [1, 2]}`.
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    const parts = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${canonicalJson(v)}`);
    return `{${parts.join(', ')}}`;
  }
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`not a JSON value: ${String(value)}`);
  return text;
}
