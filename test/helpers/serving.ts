// Serving tests: a tiny synthetic model folder (random weights, real engine) and requests that
// run until cancelled (stop tokens banned through logit_bias), so "mid-stream" needs no timing.
import { synthModel } from '../../daemon/tools/synth.js';
import { loadTextModel } from '../../daemon/engine/text-config.js';
import { tempDir, type TempDir } from './temp.js';

export interface TinyModel extends TempDir {
  /** logit_bias that bans every stop token: the output only ends at max_tokens or a cancel. */
  banStops: Record<string, number>;
  /** Ids of the `<tool_call>` and `</tool_call>` tokens. */
  toolCallToken: number;
  toolCallEndToken: number;
  /** Id of the `<think>` token. */
  thinkToken: number;
}

/** `models synth --arch qwen3_moe --shape tiny` into a temp dir (remove it when done). */
export async function synthTiny(seed = 1): Promise<TinyModel> {
  const dir = tempDir('bs-serving-model-');
  synthModel({ arch: 'qwen3_moe', shape: 'tiny', out: dir.path, seed, force: true });
  const text = await loadTextModel(dir.path);
  const toolCallToken = text.tokenizer.idOf('<tool_call>');
  const toolCallEndToken = text.tokenizer.idOf('</tool_call>');
  const thinkToken = text.tokenizer.idOf('<think>');
  if (toolCallToken === undefined || toolCallEndToken === undefined || thinkToken === undefined)
    throw new Error('the synthetic tokenizer has no <tool_call>, </tool_call> or <think> token');
  return {
    ...dir,
    toolCallToken,
    toolCallEndToken,
    thinkToken,
    banStops: Object.fromEntries([...text.stopTokens].map((id) => [String(id), -100])),
  };
}

export const WEATHER_TOOLS = [
  {
    type: 'function' as const,
    function: {
      name: 'get_weather',
      description: 'Weather for a city',
      parameters: {
        type: 'object',
        properties: { city: { type: 'string', maxLength: 12 }, days: { type: 'integer', minimum: 1, maximum: 7 } },
        required: ['city'],
        additionalProperties: false,
      },
    },
  },
  {
    type: 'function' as const,
    function: {
      name: 'set_gripper',
      parameters: {
        type: 'object',
        properties: { gripper: { type: 'number', minimum: 0, maximum: 1 }, arm: { enum: ['left', 'right'] } },
        required: ['gripper', 'arm'],
      },
    },
  },
];
