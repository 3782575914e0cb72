// Child process of `bench decode` when runs are isolated (memory limit, cold cache, arms):
// argv[2] is the JSON of DecodeBenchOptions; prints the result as one JSON line.
import { runDecodeBench, type DecodeBenchOptions } from './decode-bench.js';

try {
  const opts = JSON.parse(process.argv[2] ?? '') as DecodeBenchOptions;
  process.stdout.write(JSON.stringify(await runDecodeBench(opts)) + '\n');
} catch (e) {
  process.stderr.write(`${(e as Error).message}\n`);
  process.exitCode = 1;
}
