import { synthModel } from '/work/wt/synth/dist/daemon/models/synth.js';
import { exportGguf } from '/work/wt/synth/dist/daemon/models/gguf-export.js';
import { referenceForward } from '/work/wt/synth/dist/daemon/models/reference/forward.js';
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { Tokenizer } from '@huggingface/tokenizers';
import { readFileSync } from 'node:fs';
const llama = await getLlama({ gpu: false, build: 'never', skipDownload: true, usePrebuiltBinaries: true, progressLogs: false, logLevel: LlamaLogLevel.error });
for (const [arch, nGroup] of [['qwen3_moe', undefined], ['glm4_moe', 4]]) {
  const r = synthModel({ arch, shape: 'tiny', out: '/tmp/syn-'+arch, force: true, seed: 1, nGroup });
  for (const type of ['f32','f16','q4_0']) {
  const gg = `/tmp/syn-${arch}-${type}.gguf`;
  exportGguf(r.dir, gg, type);
  const model = await llama.loadModel({ modelPath: gg, gpuLayers: 0 });
  if (type === 'f32') {
    const tj = JSON.parse(readFileSync(r.dir+'/tokenizer.json')); const tc = JSON.parse(readFileSync(r.dir+'/tokenizer_config.json'));
    const tok = new Tokenizer(tj, tc);
    for (const text of ['Hello robot! {"name": "move_to"} 3.14 ünïcödé 日本語\n\n  x', '<|im_start|>user\nhi<|im_end|>']) {
      const a = tok.encode(text).ids; const b = Array.from(model.tokenize(text, true));
      console.log('tokenize equal', JSON.stringify(a) === JSON.stringify(b), a.length, b.length, model.detokenize(b, true) === text);
    }
  }
  const ctx = await model.createContext({ contextSize: 64, threads: 2, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
  const seq = ctx.getSequence();
  const toks = Array.from({length: 32}, (_, i) => (i*37+11)%600);
  const res = await seq.controlledEvaluate(toks.map(t => [t, { generateNext: { probabilities: true, logits: true } }]));
  const ref = referenceForward(r.dir);
  let maxd = 0, maxp = 0, top1 = 0;
  for (let i = 0; i < toks.length; i++) {
    const rl = ref.decode(toks[i]);
    const ll = res[i].next.logits; const pp = res[i].next.probabilities;
    const m = Math.max(...rl); const z = rl.reduce((a,v)=>a+Math.exp(v-m),0);
    for (const [tok, v] of ll) maxd = Math.max(maxd, Math.abs(v - rl[tok]));
    for (const [tok, p] of pp) maxp = Math.max(maxp, Math.abs(p - Math.exp(rl[tok]-m)/z));
    const rtop = rl.indexOf(m); if ([...ll.keys()][0] === rtop) top1++;
  }
  console.log(arch, type, 'max|dlogit|', maxd.toExponential(2), 'max|dp|', maxp.toExponential(2), 'top1 agree', top1, '/', toks.length);
  await ctx.dispose(); await model.dispose();
  }
}
