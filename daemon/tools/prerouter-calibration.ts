// `prerouter calibrate` / `prerouter eval` behind the CLI: load the model, run the native
// calibration (teacher routing recorded, heads trained from the zero-training head), write the
// heads file (fp16, Edge0 layout, metadata naming what they fit) and report per-layer top-k
// recall before and after, on the training tokens and on the held-out tail.
import type { CalibrationProgress } from '../native/binding.js';
import { writePrerouterHeads } from '../models/prerouter-heads.js';
import { NativeModel } from '../engine/native-model.js';

export interface CalibrationRun {
  model: string;
  tokens: number[];
  out: string;
  /** Owner layers [first, last] (head N predicts layer N+1); default all. */
  layers?: [number, number];
  steps?: number;
  lr?: number;
  batch?: number;
  units?: number;
  threads?: number;
  heldOut?: number;
  seed?: number;
  /** Routing width the heads are for (default: the model's). */
  topK?: number;
  /** Free text stored in the file's metadata (where the text came from). */
  source: string;
  onProgress?: (p: CalibrationProgress) => void;
}

export interface LayerRecall {
  layer: number;
  predicts: number;
  train_samples: number;
  held_out_samples: number;
  recall_before: number;
  recall_after: number;
  held_out_recall_before: number;
  held_out_recall_after: number;
  loss_before: number;
  loss_after: number;
}

export interface CalibrationReport {
  model: string;
  out: string;
  file_bytes: number;
  tokens: number;
  top_k: number;
  units: number;
  steps: number;
  seconds: number;
  layers: LayerRecall[];
  mean: { recall_before: number; recall_after: number; held_out_recall_before: number; held_out_recall_after: number };
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export async function runCalibration(
  o: CalibrationRun,
  clock: () => number = () => performance.now(),
): Promise<CalibrationReport> {
  const t0 = clock();
  const model = await NativeModel.load(o.model, { threads: o.threads ?? 1, ...(o.topK ? { topK: o.topK } : {}) });
  try {
    const units = o.units ?? 512;
    const steps = o.steps ?? 300;
    const r = await model.calibratePrerouter(
      o.tokens,
      {
        units,
        steps,
        threads: o.threads ?? 1,
        ...(o.layers ? { firstLayer: o.layers[0], lastLayer: o.layers[1] } : {}),
        ...(o.lr !== undefined ? { lr: o.lr } : {}),
        ...(o.batch !== undefined ? { batch: o.batch } : {}),
        ...(o.heldOut !== undefined ? { heldOut: o.heldOut } : {}),
        ...(o.seed !== undefined ? { seed: o.seed } : {}),
      },
      o.onProgress,
    );
    const s = model.summary;
    const bytes = writePrerouterHeads(o.out, r.heads, {
      topK: s.topK,
      routing: s.routing,
      hiddenSize: s.hiddenSize,
      numExperts: s.experts,
      source: o.source,
    });
    const layers: LayerRecall[] = r.reports.map((x) => ({
      layer: x.owner,
      predicts: x.owner + 1,
      train_samples: x.trainSamples,
      held_out_samples: x.heldOutSamples,
      recall_before: x.recallBefore,
      recall_after: x.recallAfter,
      held_out_recall_before: x.heldOutRecallBefore,
      held_out_recall_after: x.heldOutRecallAfter,
      loss_before: x.lossBefore,
      loss_after: x.lossAfter,
    }));
    return {
      model: o.model,
      out: o.out,
      file_bytes: bytes,
      tokens: r.tokens,
      top_k: s.topK,
      units,
      steps,
      seconds: (clock() - t0) / 1000,
      layers,
      mean: {
        recall_before: mean(layers.map((l) => l.recall_before)),
        recall_after: mean(layers.map((l) => l.recall_after)),
        held_out_recall_before: mean(layers.map((l) => l.held_out_recall_before)),
        held_out_recall_after: mean(layers.map((l) => l.held_out_recall_after)),
      },
    };
  } finally {
    model.dispose();
  }
}

export interface EvalRun {
  model: string;
  heads: string;
  tokens: number[];
  threads?: number;
  topK?: number;
  onProgress?: (p: CalibrationProgress) => void;
}

export interface EvalReport {
  model: string;
  heads: string;
  tokens: number;
  layers: { layer: number; predicts: number; samples: number; recall: number; zero_training_recall: number }[];
  mean: { recall: number; zero_training_recall: number };
}

export async function runEval(o: EvalRun): Promise<EvalReport> {
  const model = await NativeModel.load(o.model, { threads: o.threads ?? 1, ...(o.topK ? { topK: o.topK } : {}) });
  try {
    const r = await model.evalPrerouter(o.tokens, o.heads, o.onProgress);
    const layers = r.map((x) => ({
      layer: x.owner,
      predicts: x.owner + 1,
      samples: x.samples,
      recall: x.recall,
      zero_training_recall: x.zeroTrainingRecall,
    }));
    return {
      model: o.model,
      heads: o.heads,
      tokens: o.tokens.length,
      layers,
      mean: {
        recall: mean(layers.map((l) => l.recall)),
        zero_training_recall: mean(layers.map((l) => l.zero_training_recall)),
      },
    };
  } finally {
    model.dispose();
  }
}
