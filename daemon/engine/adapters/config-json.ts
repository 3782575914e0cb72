// Typed reads of an adapter's JSON config: each accessor names the file, the key, the rule and
// the value it found, so a bad adapter_config.json gets a message a user can act on.
import { jsonSyntax, readRegularText } from '../../util/file-roots.js';
import { AdapterError } from './plan.js';

const show = (v: unknown) => JSON.stringify(v) ?? String(v);
const MAX_BYTES = 16 << 20;

export class ConfigJson {
  constructor(
    readonly raw: Record<string, unknown>,
    readonly file: string,
    private readonly prefix = '',
  ) {}

  static async read(file: string): Promise<ConfigJson> {
    // Adapter configs are kilobytes: a huge file is the wrong file, not read into memory.
    const text = await readRegularText(file, MAX_BYTES);
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      throw new AdapterError(`${file}: cannot read it as JSON (${jsonSyntax(e)})`);
    }
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new AdapterError(`${file}: must be a JSON object, got ${show(raw)}`);
    return new ConfigJson(raw as Record<string, unknown>, file);
  }

  fail(key: string, rule: string): never {
    throw new AdapterError(`${this.file}: ${this.prefix}${key} ${rule}, got ${show(this.raw[key])}`);
  }

  has(key: string): boolean {
    return this.raw[key] !== undefined && this.raw[key] !== null;
  }

  int(key: string, min: number, fallback?: number): number {
    const v = this.raw[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min) this.fail(key, `must be an integer ≥ ${min}`);
    return v;
  }

  num(key: string, fallback?: number): number {
    const v = this.raw[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(key, 'must be a finite number');
    return v;
  }

  bool(key: string, fallback: boolean): boolean {
    const v = this.raw[key] ?? fallback;
    if (typeof v !== 'boolean') this.fail(key, 'must be true or false');
    return v;
  }

  str(key: string, fallback?: string): string {
    const v = this.raw[key] ?? fallback;
    if (typeof v !== 'string') this.fail(key, 'must be a string');
    return v;
  }

  /** A nested object as its own ConfigJson (messages say `outer.inner`). */
  obj(key: string): ConfigJson {
    const v = this.raw[key] ?? {};
    if (typeof v !== 'object' || Array.isArray(v)) this.fail(key, 'must be an object');
    return new ConfigJson(v as Record<string, unknown>, this.file, `${this.prefix}${key}.`);
  }

  /** A {string: number} map (PEFT rank_pattern / alpha_pattern), in insertion order. */
  numberMap(key: string): [string, number][] {
    const o = this.obj(key);
    return Object.keys(o.raw).map((k) => [k, o.num(k)]);
  }
}
