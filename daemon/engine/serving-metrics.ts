// Prometheus metrics of the model server, registered on the daemon's registry: loaded models,
// queue depth, load time, token counters and per-request speeds (by model).
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Timings, Usage } from './generate.js';
import { StreamMetrics } from './stream-metrics.js';

export class ServingMetrics {
  readonly loaded: Gauge<'model'>;
  readonly queueDepth: Gauge<'model'>;
  readonly active: Gauge<'model'>;
  readonly loadSeconds: Histogram<'model'>;
  readonly requests: Counter<'model' | 'outcome'>;
  readonly prefillTokens: Counter<'model'>;
  readonly cachedTokens: Counter<'model'>;
  readonly decodeTokens: Counter<'model'>;
  readonly ttft: Histogram<'model'>;
  readonly prefillRate: Gauge<'model'>;
  readonly decodeRate: Gauge<'model'>;
  readonly stream: StreamMetrics;

  constructor(registry: Registry) {
    const registers = [registry];
    this.stream = new StreamMetrics(registry);
    this.loaded = new Gauge({
      name: 'brainstem_model_loaded',
      help: '1 while the model is loaded, 0 otherwise',
      labelNames: ['model'],
      registers,
    });
    this.queueDepth = new Gauge({
      name: 'brainstem_model_queue_depth',
      help: 'Requests waiting for the model (not counting the running one)',
      labelNames: ['model'],
      registers,
    });
    this.active = new Gauge({
      name: 'brainstem_model_active_requests',
      help: 'Requests the model is running (0 or 1)',
      labelNames: ['model'],
      registers,
    });
    this.loadSeconds = new Histogram({
      name: 'brainstem_model_load_seconds',
      help: 'Time to load a model',
      labelNames: ['model'],
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers,
    });
    this.requests = new Counter({
      name: 'brainstem_chat_requests_total',
      help: 'Chat requests by outcome: a finish reason (stop, length, tool_calls, cancelled), error (bad model output) or a refusal (busy, invalid, failed)',
      labelNames: ['model', 'outcome'],
      registers,
    });
    this.prefillTokens = new Counter({
      name: 'brainstem_prefill_tokens_total',
      help: 'Prompt tokens run through prefill',
      labelNames: ['model'],
      registers,
    });
    this.cachedTokens = new Counter({
      name: 'brainstem_prompt_cached_tokens_total',
      help: 'Prompt tokens served from a session cache instead of prefill',
      labelNames: ['model'],
      registers,
    });
    this.decodeTokens = new Counter({
      name: 'brainstem_decode_tokens_total',
      help: 'Generated tokens (completion tokens)',
      labelNames: ['model'],
      registers,
    });
    this.ttft = new Histogram({
      name: 'brainstem_time_to_first_token_seconds',
      help: 'From request arrival (queue and load included) to the first generated token',
      labelNames: ['model'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.prefillRate = new Gauge({
      name: 'brainstem_prefill_tokens_per_second',
      help: 'Prefill speed of the last request that prefilled tokens',
      labelNames: ['model'],
      registers,
    });
    this.decodeRate = new Gauge({
      name: 'brainstem_decode_tokens_per_second',
      help: 'Decode speed of the last request that decoded tokens',
      labelNames: ['model'],
      registers,
    });
  }

  /** Records one finished generation. */
  recordGeneration(model: string, usage: Usage, t: Timings, firstToken: boolean): void {
    this.prefillTokens.inc({ model }, t.prefillTokens);
    this.cachedTokens.inc({ model }, usage.cachedTokens);
    this.decodeTokens.inc({ model }, usage.completionTokens);
    if (firstToken) this.ttft.observe({ model }, t.timeToFirstTokenMs / 1000);
    if (t.prefillTokens > 0 && t.prefillMs > 0) this.prefillRate.set({ model }, t.prefillTokensPerSecond);
    if (t.decodeTokens > 0 && t.decodeMs > 0) this.decodeRate.set({ model }, t.decodeTokensPerSecond);
  }
}
