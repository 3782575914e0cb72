#!/usr/bin/env bash
# The CUDA backend on a machine with an NVIDIA GPU: builds the addon with CUDA for this GPU's
# arch (ARCHS, default 90), then runs
#   ops     the native tests: the CUDA cases on the device (test-cuda-device.cpp: gather, the
#           MoE block, the prerouter; the op, LoRA and expert-path loops of test-ops/test-lora
#           include every usable set; the decoder's own kernels one by one, cuda_device_decoder_
#           kernels_* and cuda_device_hybrid_kernels_*) and, as everywhere, the emulation cases,
#   model   greedy decode on 'cuda' vs 'cpu-ref', exact/staged/hot paths (accel-model.test.ts),
#   decoder the whole-token CUDA decoder on the device (cuda-decoder.test.ts with
#           BRAINSTEM_TEST_CUDA=gpu: greedy tokens and logits vs the CPU, one sync per append, the
#           decode graph, f16 KV, expert slots), sessions on it (cuda-session.test.ts: tokens as
#           CPU sessions through truncation, top-k, LoRA, prerouter, hand-over; expert slots from a
#           small budget, filled by the I/O threads; seeded random calls), and its decode
#           benchmark on moe-small (graph and
#           plain stream; float32 and f16 KV; all experts resident and 16 slots per layer) and on a
#           hybrid of that size (qwen3_5_moe: Gated DeltaNet layers, f16 KV),
#   bench   the op benchmark, decode on synthetic moe-small ('cuda', the fastest CPU set, and
#           with a LoRA adapter on 'cuda'), llama.cpp's CUDA build beside ours on the same model
#           (bench compare --llama-cuda, when node-llama-cpp's CUDA binary loads), and with
#           FULL=1 the same on moe-30b (synthesis writes ~17 GB: minutes of disk),
#   doctor  what `brainstem doctor` reports for the device,
# and prints one JSON object on stdout (logs go to stderr and to $OUT_DIR). Each step has a
# time limit so the whole run stays under 8 minutes on an H200 (without FULL).
# Usage: test/device/cuda-check.sh   (npm run test:cuda; ARCHS=87 on Orin)
#   PREBUILT=1 uses dist/ and build/Release/ as they are (built on another machine for this GPU's
#   arch), for a GPU machine without npm or a C++ toolchain; only node is needed there.
#   BASELINE=path to an earlier build's brainstem-native-tests: its decoder bench alternates with
#   this build's, two rounds per shape (decoder-ab-* in the JSON), for a change's before/after.
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT_DIR:-$(mktemp -d -t brainstem-cuda.XXXXXX)}"
mkdir -p "$out"
echo "cuda-check: logs in $out" >&2
jobs="$(nproc 2>/dev/null || echo 4)"
cli="node dist/daemon/main.js"
step() {  # step NAME SECONDS CMD...: runs CMD with a limit (at most STEP_CAP), output to $out/NAME.{json,log}
  local name=$1 limit=$2
  shift 2
  [ "$limit" -gt "${STEP_CAP:-$limit}" ] && limit=$STEP_CAP
  echo "cuda-check: $name" >&2
  timeout "$limit" "$@" >"$out/$name.json" 2>"$out/$name.log"
  echo $? >"$out/$name.rc"
}

bin=build/Release/brainstem-native-tests
if [ "${PREBUILT:-0}" = 1 ]; then
  step build-native 10 test -x "$bin" -a -f build/Release/brainstem.node -a -f dist/daemon/main.js
else
  step build-ts 120 npm run -s build:ts
  step build-native 400 npx cmake-js compile --out build --parallel "$jobs" "--CDBRAINSTEM_CUDA_ARCHS=${ARCHS:-90}"
fi
if [ "$(cat "$out/build-native.rc")" = 0 ]; then
  step doctor 60 $cli doctor --json
  step ops 300 "$bin"
  step model 240 node test/run.mjs accel-model
  BRAINSTEM_TEST_CUDA=gpu step decoder 240 node test/run.mjs cuda-decoder
  BRAINSTEM_TEST_CUDA=gpu step session 180 node test/run.mjs cuda-session
  step bench-ops 120 "$bin" --bench qmatvec gather_matmul attention rmsnorm lora_delta
  shapes="moe-small"
  [ "${FULL:-0}" = 1 ] && shapes="moe-small moe-30b"
  for shape in $shapes; do
    dir="$out/$shape"
    step "synth-$shape" 900 $cli models synth --arch qwen3_moe --shape "$shape" --out "$dir"
    BRAINSTEM_TEST_CUDA=gpu step "decoder-bench-$shape" 300 "$bin" --cuda-decoder "$dir" 128 bench
    BRAINSTEM_TEST_CUDA=gpu step "decoder-bench-$shape-f16" 300 "$bin" --cuda-decoder "$dir" 128 bench,f16
    BRAINSTEM_TEST_CUDA=gpu step "decoder-bench-$shape-slots16" 300 "$bin" --cuda-decoder "$dir" 128 bench,slots16
    # An earlier build's decoder beside this one, alternating (a kernel change's before and after).
    if [ -n "${BASELINE:-}" ]; then
      for round in 1 2; do
        BRAINSTEM_TEST_CUDA=gpu step "decoder-ab-$shape-$round-baseline" 120 "$BASELINE" --cuda-decoder "$dir" 128 bench
        BRAINSTEM_TEST_CUDA=gpu step "decoder-ab-$shape-$round-this" 120 "$bin" --cuda-decoder "$dir" 128 bench
      done
    fi
    for backend in cuda auto; do
      step "decode-$shape-$backend" 300 $cli bench decode --model "$dir" --backend "$backend" --kv-cache f16 \
        --threads "$jobs" --prompt 128 --gen 64 --json
    done
    step "adapter-$shape" 120 $cli models synth-adapter --model "$dir" --out "$out/$shape-lora" --rank 16
    step "decode-$shape-cuda-lora" 300 $cli bench decode --model "$dir" --backend cuda --kv-cache f16 --threads "$jobs" --prompt 128 \
      --gen 64 --adapter "$out/$shape-lora" --json
    [ -d node_modules/node-llama-cpp ] && step "compare-$shape" 600 $cli bench compare --model "$dir" --backend cuda --llama-cuda --rounds 2 --json
  done
  # A hybrid (Gated DeltaNet layers, output-gated attention) through the decoder.
  step synth-hybrid 300 $cli models synth --arch qwen3_5_moe --shape moe-small --out "$out/hybrid"
  BRAINSTEM_TEST_CUDA=gpu step decoder-bench-hybrid-f16 300 "$bin" --cuda-decoder "$out/hybrid" 128 bench,f16
fi

OUT="$out" node --input-type=module -e '
import { existsSync, readFileSync, readdirSync } from "node:fs";
const dir = process.env.OUT;
const text = (f) => (existsSync(`${dir}/${f}`) ? readFileSync(`${dir}/${f}`, "utf8") : "");
const json = (f) => { try { return JSON.parse(text(f)); } catch { return null; } };
const rc = (n) => (existsSync(`${dir}/${n}.rc`) ? Number(text(`${n}.rc`)) : null);
const tail = (f, n = 30) => text(f).split("\n").slice(-n).join("\n");
const steps = readdirSync(dir).filter((f) => f.endsWith(".rc")).map((f) => f.slice(0, -3));
const ops = text("ops.json").split("\n");
const doctor = json("doctor.json");
const bench = json("bench-ops.json");
console.log(JSON.stringify({
  steps: Object.fromEntries(steps.map((s) => [s, rc(s)])),
  build: rc("build-native") === 0 ? "ok" : tail("build-native.log"),
  device: doctor?.native?.backends?.find((b) => b.name === "cuda") ?? null,
  ops: {
    summary: ops.find((l) => l.startsWith("# cases")) ?? null,
    cuda: ops.filter((l) => / cuda/.test(l) || /^(FAIL|skip) /.test(l)),
    failures: ops.filter((l) => l.startsWith("  ")).slice(0, 40),
  },
  model: { rc: rc("model"), log: tail("model.log", 15) },
  decoder: { rc: rc("decoder"), log: tail("decoder.log", 15) },
  session: { rc: rc("session"), log: tail("session.log", 15) },
  bench_ops: Array.isArray(bench) ? bench.filter((b) => b.backend === "cuda" || b.backend.startsWith("cpu-avx")) : null,
  decode: Object.fromEntries(steps.filter((s) => /^(decode|decoder-bench|decoder-ab|compare)-/.test(s))
    .map((s) => [s, json(`${s}.json`) ?? tail(`${s}.log`, 8)])),
}, null, 2));
'
[ "$(cat "$out/build-native.rc")" = 0 ] && [ "$(cat "$out/ops.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$out/model.rc" 2>/dev/null)" = 0 ] &&
  [ "$(cat "$out/decoder.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$out/session.rc" 2>/dev/null)" = 0 ]
