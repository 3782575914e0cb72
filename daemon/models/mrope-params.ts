// Where a text config declares its multimodal RoPE (Qwen3-VL, Qwen3.5): one lookup for the engine's
// float64 reference, the GGUF exporter and the model-folder check.

export interface MropeParams {
  /** [time, height, width] frequency slots; checked against the rotary dims by the readers. */
  mrope_section: unknown[];
  mrope_interleaved?: unknown;
}

/** The object holding `mrope_section`: transformers 5's rope_parameters first, then rope_scaling
 *  (Qwen3-VL and older Qwen3.5 configs); undefined when neither lists one. */
export function mropeParams(text: Record<string, unknown>): MropeParams | undefined {
  for (const r of [text.rope_parameters, text.rope_scaling]) {
    if (typeof r === 'object' && r !== null && Array.isArray((r as MropeParams).mrope_section)) return r as MropeParams;
  }
  return undefined;
}
