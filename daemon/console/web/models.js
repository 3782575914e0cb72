// Models: each configured model's state, queue and memory (models.status), and sparklines of
// the last minutes: decode tok/s, time blocked on expert loads per token, slot hit rate and
// prerouter recall (from system.metrics counters), process memory and event-loop delay
// (system.telemetry).
import uPlot from '/console/vendor/uPlot.esm.js';

const POINTS = 120;
const MiB = 1 << 20;

function spark(parent, label) {
  const box = document.createElement('div');
  box.className = 'spark';
  const title = document.createElement('span');
  title.textContent = label;
  const value = document.createElement('b');
  box.append(title, value);
  parent.append(box);
  const u = new uPlot(
    {
      width: 160,
      height: 40,
      legend: { show: false },
      cursor: { show: false },
      scales: { x: { time: false } },
      axes: [{ show: false }, { show: false }],
      series: [{}, { stroke: '#40c0ff', width: 1.5, fill: 'rgba(64,192,255,0.15)' }],
    },
    [[], []],
    box,
  );
  const xs = [];
  const ys = [];
  return {
    push(y, text) {
      xs.push(xs.length ? xs[xs.length - 1] + 1 : 0);
      ys.push(y);
      if (xs.length > POINTS) {
        xs.shift();
        ys.shift();
      }
      u.setData([xs, ys]);
      value.textContent = text ?? (y === null ? '–' : String(y));
      box.dataset.points = String(xs.length);
    },
  };
}

/** Sum of a metric's values whose labels match `labels`. */
function metric(snapshot, name, labels = {}) {
  const m = snapshot.metrics.find((x) => x.name === name);
  if (!m) return null;
  let sum = 0;
  let found = false;
  for (const v of m.values) {
    if (Object.entries(labels).every(([k, want]) => v.labels[k] === want)) {
      sum += v.value;
      found = true;
    }
  }
  return found ? sum : null;
}

export class Models {
  constructor(rpc, box, systemBox) {
    Object.assign(this, { rpc, box, systemBox });
    this.cards = new Map();
    this.prev = null;
    this.system = null;
    rpc.on('system.telemetry', (t) => this.telemetry(t));
    setInterval(() => this.refresh().catch(() => undefined), 2000);
  }

  async start() {
    await this.rpc.call('system.subscribe', { interval_ms: 1000 }).catch(() => undefined);
    await this.refresh().catch(() => undefined);
  }

  telemetry(t) {
    if (!this.system) {
      this.system = {
        rss: spark(this.systemBox, 'daemon RSS'),
        loop: spark(this.systemBox, 'event loop p99'),
        cpu: spark(this.systemBox, 'CPU'),
      };
    }
    this.system.rss.push(t.memory.rss_bytes / MiB, `${(t.memory.rss_bytes / MiB).toFixed(0)} MiB`);
    this.system.loop.push(t.event_loop.p99_ms, `${t.event_loop.p99_ms.toFixed(1)} ms`);
    this.system.cpu.push(t.cpu.process_percent, `${t.cpu.process_percent.toFixed(0)} %`);
  }

  card(name) {
    let c = this.cards.get(name);
    if (c) return c;
    this.box.querySelector('.empty')?.remove();
    const div = document.createElement('div');
    div.className = 'model-card';
    div.dataset.model = name;
    const head = document.createElement('p');
    const sparks = document.createElement('div');
    sparks.className = 'sparks';
    div.append(head, sparks);
    this.box.append(div);
    c = {
      head,
      tps: spark(sparks, 'decode tok/s'),
      blocked: spark(sparks, 'blocked ms/token'),
      hits: spark(sparks, 'slot hit rate'),
      recall: spark(sparks, 'prerouter recall'),
      queue: spark(sparks, 'queue'),
    };
    this.cards.set(name, c);
    return c;
  }

  async refresh() {
    const status = await this.rpc.call('models.status');
    const snap = await this.rpc.call('system.metrics');
    const mem = status.memory ?? {};
    for (const m of status.models) {
      const c = this.card(m.name);
      const memory = m.memory
        ? `KV ${(m.memory.kv_cache_bytes / MiB).toFixed(1)} MiB, weights ${(m.memory.weight_file_bytes / MiB).toFixed(0)} MiB (file)`
        : '';
      c.head.textContent = `${m.name} · ${m.state}${m.progress !== undefined && m.state === 'loading' ? ` ${(m.progress * 100).toFixed(0)} %` : ''} · ${m.profile?.backend ?? ''} · ${memory} · process anon ${((mem.rss_anon_bytes ?? 0) / MiB).toFixed(0)} MiB / file ${((mem.rss_file_bytes ?? 0) / MiB).toFixed(0)} MiB`;
      const l = { model: m.name };
      const was = this.prev;
      const delta = (name) => {
        const now = metric(snap, name, l);
        const before = was ? metric(was, name, l) : null;
        return now === null || before === null ? null : now - before;
      };
      const dt = was ? snap.time - was.time : 0;
      const tokens = delta('brainstem_decode_tokens_total');
      const rate = dt > 0 && tokens !== null ? tokens / dt : null;
      c.tps.push(rate, rate === null ? '–' : rate.toFixed(1));
      const blocked = delta('brainstem_expert_blocked_seconds_total');
      const perTok = tokens ? (1000 * (blocked ?? 0)) / tokens : null;
      c.blocked.push(perTok, perTok === null ? '–' : perTok.toFixed(2));
      const hits = delta('brainstem_expert_slot_hits_total');
      const misses = delta('brainstem_expert_slot_misses_total');
      const hitRate = hits !== null && misses !== null && hits + misses > 0 ? hits / (hits + misses) : null;
      c.hits.push(hitRate, hitRate === null ? '–' : `${(hitRate * 100).toFixed(0)} %`);
      const rh = metric(snap, 'brainstem_prerouter_recall_hits_total', l);
      const rt = metric(snap, 'brainstem_prerouter_recall_total', l);
      const recall = rh !== null && rt ? rh / rt : null;
      c.recall.push(recall, recall === null ? '–' : `${(recall * 100).toFixed(0)} %`);
      const q = m.queue ? m.queue.waiting : null;
      c.queue.push(q, q === null ? '–' : `${m.queue.active} active, ${q} waiting`);
    }
    this.prev = snap;
  }
}
