#!/usr/bin/env bash
# The Metal backend on a Mac (Apple silicon): builds the addon with Metal, then runs
#   ops     the Metal op tests on the GPU (test/native/test-metal.cpp, the cases the shim runs
#           on Linux) against the scalar reference kernels,
#   model   greedy decode of synthetic models on 'metal' vs 'cpu-ref' (accel-model.test.ts),
#   decoder the whole-token decoder (one command list per token) on the GPU vs the CPU
#           reference (metal-decoder.test.ts),
#   session sessions on that decoder (KV cache on the GPU) vs CPU sessions through truncation,
#           a prefix-cache hit, top-k, a LoRA, greedy steps sampled on the GPU, an f16 KV cache,
#           experts streamed through staged slots (page-cache and F_NOCACHE reads, with and
#           without the prerouter) and an injected device failure (metal-session.test.ts),
#   bench   the op benchmark (brainstem-native-tests --bench), decode of a synthetic hybrid
#           (qwen3_5_moe moe-small: Gated DeltaNet layers) on 'metal' and the CPU, and, given a model folder, the
#           decode benchmark on 'metal' (sessions on the decoder), on the fastest CPU set and on
#           cpu-neon-dotprod (what cpu-neon-i8mm, auto on M2 and later, is measured against),
#           and streamed on 'metal' (staged slots, direct reads, prerouter off and on),
#   doctor  what `brainstem doctor` reports (Metal device and GPU working-set budget),
# and prints one JSON object on stdout (logs go to stderr and to $OUT_DIR).
# Usage: test/device/metal-check.sh [MODEL_DIR]   (npm run test:metal -- [MODEL_DIR])
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ "$(uname -s)" != Darwin ]; then
  echo "metal-check: needs macOS with a Metal GPU (on Linux the shim tests run in the normal suite)" >&2
  exit 2
fi
model="${1:-}"
out="${OUT_DIR:-$(mktemp -d -t brainstem-metal)}"
mkdir -p "$out"
echo "metal-check: logs in $out" >&2

npm run -s build:ts >"$out/build-ts.log" 2>&1 && npx cmake-js compile --out build >"$out/build-native.log" 2>&1
build=$?
bin=build/Release/brainstem-native-tests

ops=1 model_rc=1 decoder=1 session=1
if [ $build -eq 0 ]; then
  BRAINSTEM_TEST_METAL=gpu "$bin" metal >"$out/ops.log" 2>&1
  ops=$?
  node test/run.mjs accel-model >"$out/model.log" 2>&1
  model_rc=$?
  BRAINSTEM_TEST_METAL=gpu node test/run.mjs metal-decoder >"$out/decoder.log" 2>&1
  decoder=$?
  BRAINSTEM_TEST_METAL=gpu node test/run.mjs metal-session >"$out/session.log" 2>&1
  session=$?
  "$bin" --bench >"$out/bench-ops.json" 2>"$out/bench-ops.log"
  # A synthetic hybrid (Qwen3.5-shaped moe-small: Gated DeltaNet layers) on the decoder and the CPU.
  node dist/daemon/main.js models synth --arch qwen3_5_moe --shape moe-small --out "$out/hybrid" >"$out/synth-hybrid.log" 2>&1
  for backend in metal auto; do
    node dist/daemon/main.js bench decode --model "$out/hybrid" --backend "$backend" --json \
      >"$out/bench-decode-hybrid-$backend.json" 2>"$out/bench-decode-hybrid-$backend.log"
  done
  node dist/daemon/main.js doctor --json >"$out/doctor.json" 2>"$out/doctor.log"
  if [ -n "$model" ]; then
    for backend in metal auto cpu-neon-dotprod; do
      node dist/daemon/main.js bench decode --model "$model" --backend "$backend" --json \
        >"$out/bench-decode-$backend.json" 2>"$out/bench-decode-$backend.log"
    done
    node dist/daemon/main.js bench decode --model "$model" --backend metal --path staged --io-mode direct \
      --prerouter off,on --json >"$out/bench-decode-metal-staged.json" 2>"$out/bench-decode-metal-staged.log"
  fi
fi

OUT="$out" BUILD=$build OPS=$ops MODEL=$model_rc DECODER=$decoder SESSION=$session node --input-type=module -e '
import { existsSync, readFileSync } from "node:fs";
const dir = process.env.OUT;
const json = (f) => { try { return JSON.parse(readFileSync(`${dir}/${f}`, "utf8")); } catch { return null; } };
const tail = (f) => existsSync(`${dir}/${f}`) ? readFileSync(`${dir}/${f}`, "utf8").split("\n").slice(-40).join("\n") : "";
const doctor = json("doctor.json");
const metal = doctor?.native?.backends?.find((b) => b.name === "metal") ?? null;
const bench = json("bench-ops.json");
console.log(JSON.stringify({
  build: { ok: process.env.BUILD === "0", log: process.env.BUILD === "0" ? undefined : tail("build-native.log") },
  device: metal,
  ops: { ok: process.env.OPS === "0", log: tail("ops.log") },
  model: { ok: process.env.MODEL === "0", log: tail("model.log") },
  decoder: { ok: process.env.DECODER === "0", log: tail("decoder.log") },
  session: { ok: process.env.SESSION === "0", log: tail("session.log") },
  bench_ops: Array.isArray(bench) ? bench.filter((b) => b.backend === "metal" || b.backend.startsWith("cpu-neon")) : null,
  bench_decode: {
    metal: json("bench-decode-metal.json"),
    cpu: json("bench-decode-auto.json"),
    cpu_neon_dotprod: json("bench-decode-cpu-neon-dotprod.json"),
    metal_staged: json("bench-decode-metal-staged.json"),
    hybrid_metal: json("bench-decode-hybrid-metal.json"),
    hybrid_cpu: json("bench-decode-hybrid-auto.json"),
  },
}, null, 2));
'
[ $build -eq 0 ] && [ $ops -eq 0 ] && [ $model_rc -eq 0 ] && [ $decoder -eq 0 ] && [ $session -eq 0 ]
