// Child process of `bench decode` when runs are isolated (memory limit, cold cache, arms):
// argv[2] is the JSON of DecodeBenchOptions; prints the result as one JSON line, or a failure as
// one JSON line on stderr: {error, option?, detail?} (a load option the engine refused).
import type { EngineError } from '../engine/native-model.js';
import { runDecodeBench, type DecodeBenchOptions } from './decode-bench.js';

try {
  const opts = JSON.parse(process.argv[2] ?? '') as DecodeBenchOptions;
  process.stdout.write(JSON.stringify(await runDecodeBench(opts)) + '\n');
} catch (e) {
  const { message, option, detail } = e as EngineError;
  process.stderr.write(`${JSON.stringify({ error: message, ...(option ? { option, detail } : {}) })}\n`);
  process.exitCode = 1;
}
