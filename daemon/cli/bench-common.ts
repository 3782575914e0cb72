// Shared by the engine benchmarks: integer options and the output (one JSON line with
// --json or when piped, else a table).
import { CliError } from './exit.js';
import type { ActivationBits } from '../native/binding.js';

/** `value` of option --name as an integer in [lo, hi]; a CliError (exit 2) otherwise. */
export function intOption(name: string, value: string, lo: number, hi = Number.MAX_SAFE_INTEGER): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < lo || n > hi) {
    const range = hi === Number.MAX_SAFE_INTEGER ? `≥ ${lo}` : `in [${lo}, ${hi}]`;
    throw new CliError(`--${name} must be an integer ${range}, got "${value}"`, 2);
  }
  return n;
}

/** --activation-bits: 16 (default), 24 or 8, see LoadModelOptions.activationBits. */
export function activationBitsOption(value: string): ActivationBits {
  if (value !== '16' && value !== '24' && value !== '8')
    throw new CliError(`--activation-bits must be 8, 16 or 24, got "${value}"`, 2);
  return Number(value) as ActivationBits;
}

export function printBench(result: object, json: boolean | undefined): void {
  if (json || !process.stdout.isTTY) {
    process.stdout.write(JSON.stringify(result) + '\n');
    return;
  }
  for (const [k, v] of Object.entries(result)) {
    const text =
      typeof v === 'number' && !Number.isInteger(v)
        ? v.toFixed(3)
        : typeof v === 'object'
          ? JSON.stringify(v)
          : String(v);
    process.stdout.write(`${k.padEnd(24)} ${text}\n`);
  }
}
