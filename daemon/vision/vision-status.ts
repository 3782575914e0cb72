// A loaded vision tower as models.status reports it.
import type { VisionRuntime } from './vision-runtime.js';

export interface VisionStatus {
  encoder: string;
  provider: string;
  provider_why: string;
  deepstack_layers: number;
  images_encoded: number;
  image_cache_hits: number;
}

export function visionStatus(v: VisionRuntime): VisionStatus {
  return {
    encoder: v.tower.file,
    provider: v.tower.provider.provider,
    provider_why: v.tower.provider.why,
    deepstack_layers: v.tower.deepstackOutputs.length,
    images_encoded: v.stats.encoded,
    image_cache_hits: v.stats.cacheHits,
  };
}
