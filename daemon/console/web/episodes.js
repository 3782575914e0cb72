// Policy episodes: a start form, this run's episodes (policy.list), and the selected one's
// timeline (policy.get events, then policy.event notifications), budget, feedback, pause /
// resume / stop and the operator confirmation of a pending done. A long episode is shown by its
// last MAX_EVENTS events and last MAX_THUMBS images: the page keeps no more of it.
const $ = (id) => document.getElementById(id);
/** Events kept (and shown) per episode; the earlier ones are counted. */
const MAX_EVENTS = 200;
/** Observation images shown (and kept): the newest ones; older observations name their images. */
const MAX_THUMBS = 24;
// interrupted: a record the daemon stopped in, marked at its next start (never a live episode's state).
const FINAL = new Set(['done', 'gave_up', 'budget_exhausted', 'stopped', 'failed', 'interrupted']);
const short = (v, n = 400) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > n ? `${s.slice(0, n)}…` : s;
};

const tokens = (u) =>
  u ? `${u.promptTokens ?? '?'}+${u.completionTokens ?? '?'} tokens${u.estimated ? ' (estimated)' : ''}` : 'no usage';

/** One timeline line per event: what happened, in words. */
function describe(e) {
  switch (e.type) {
    case 'started':
      return `started: "${e.instruction}" on ${e.robot} (${e.provider}, check ${e.check})`;
    case 'state':
      return `state → ${e.state}`;
    case 'observation':
      return `observation ${e.decision}${e.feedback?.length ? ` · feedback: ${e.feedback.join(' / ')}` : ''}`;
    case 'decision':
      return `model ${e.decision}: ${short(e.raw, 300)} (${e.finish_reason}; ${tokens(e.usage)})`;
    case 'request':
      return e.error ? `not executed: ${e.error}` : `call ${e.tool} ${short(e.arguments, 200)}`;
    case 'progress':
      return `${e.tool} ${e.phase}`;
    case 'outcome':
      return `${e.tool ?? 'call'} → ${e.status}${e.reason ? ` (${e.reason})` : ''}: ${short(e.message, 300)}`;
    case 'check_pending':
      return `done claimed: ${e.summary ?? ''} (waiting for the operator)`;
    case 'check':
      return `check ${e.kind}: ${e.complete ? 'complete' : 'not complete'}${e.reason ? ` (${e.reason})` : ''}`;
    case 'feedback':
      return `operator: ${e.text}`;
    case 'record_limit':
      return `record: ${e.message}`;
    case 'finished':
      return `finished: ${e.state}${e.reason ? ` (${e.reason})` : ''}`;
    default:
      return e.type;
  }
}

/** The events before a page of the last ones (seqs count from 0, one per event): not kept. */
function earlierThan(events) {
  const first = events[0]?.seq ?? 0;
  return { count: first, seq: first - 1 };
}

/** An observation image not shown: its name. */
function unshown(image) {
  const span = document.createElement('span');
  span.className = 'thumb-unshown';
  span.textContent = ` [${image}]`;
  return span;
}

export class Episodes {
  constructor(rpc, onError) {
    this.rpc = rpc;
    this.onError = onError;
    this.events = new Map();
    /** Per episode: how many earlier events are not kept, and the last seq among them. */
    this.earlier = new Map();
    /** Thumbnails shown, by `${episode}/${image}`: policy.image data URLs (released when not shown). */
    this.thumbs = new Map();
    this.summaries = new Map();
    this.selected = null;
    this.form = $('episode-form');
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.submit().catch((err) => ($('episode-error').textContent = err.message));
    });
    this.form.provider.addEventListener('change', () => this.showProviderFields());
    this.showProviderFields();
    rpc.on('policy.event', (e) => this.onEvent(e));
    const act = (method) => () =>
      this.selected && rpc.call(method, { id: this.selected }).then((s) => this.setSummary(s), onError);
    $('episode-pause').addEventListener('click', act('policy.pause'));
    $('episode-resume').addEventListener('click', act('policy.resume'));
    $('episode-stop').addEventListener('click', act('policy.stop'));
    $('feedback-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const text = e.target.text.value.trim();
      if (!this.selected || !text) return;
      rpc.call('policy.feedback', { id: this.selected, text }).then(() => (e.target.text.value = ''), onError);
    });
    $('confirm-form').addEventListener('submit', (e) => {
      e.preventDefault();
      const complete = e.submitter?.value === 'yes';
      rpc
        .call('policy.confirm', { id: this.selected, complete })
        .then(() => ($('confirm-form').hidden = true), onError);
    });
  }

  showProviderFields() {
    const kind = this.form.provider.value;
    for (const l of this.form.querySelectorAll('[data-for]')) l.hidden = !l.dataset.for.split(' ').includes(kind);
  }

  setRobots(ids) {
    const select = this.form.robot;
    if ([...select.options].map((o) => o.value).join() === ids.join()) return;
    const keep = select.value;
    select.replaceChildren(...ids.map((id) => new Option(id, id)));
    if (ids.includes(keep)) select.value = keep;
  }

  /** The policy.start params the form describes. */
  params() {
    const f = this.form;
    const kind = f.provider.value;
    const provider =
      kind === 'scripted'
        ? { kind, lines: f.lines.value.split('\n').filter((l) => l.trim() !== '') }
        : kind === 'openai'
          ? {
              kind,
              base_url: f.base_url.value,
              model: f.model.value,
              ...(f.api_key_env.value ? { api_key_env: f.api_key_env.value } : {}),
            }
          : { kind, model: f.model.value };
    const decisions = Number(f.decisions.value);
    return {
      robot: f.robot.value,
      instruction: f.instruction.value,
      provider,
      check: { kind: f.check.value },
      ...(decisions > 0 ? { budget: { decisions } } : {}),
      ...(f.detach.checked ? { detach: true } : {}),
    };
  }

  /** An episode's events from the first given, keeping the last MAX_EVENTS. */
  keep(id, list, earlier = { count: 0, seq: -Infinity }) {
    const over = list.length - MAX_EVENTS;
    if (over > 0) {
      const gone = list.splice(0, over);
      earlier = { count: earlier.count + over, seq: Math.max(earlier.seq, gone[gone.length - 1].seq ?? -Infinity) };
    }
    this.events.set(id, list);
    this.earlier.set(id, earlier);
  }

  async submit() {
    $('episode-error').textContent = '';
    const { id } = await this.rpc.call('policy.start', this.params());
    this.watched.add(id); // its starter gets its events already
    this.events.set(id, this.events.get(id) ?? []);
    await this.refreshList(); // first: select() reads a live episode of this run, not a record
    await this.select(id);
  }

  /** On every connection: this run's episodes, watching the running ones, and the selected one
   *  read again (events of the time the connection was down were not notified here). */
  async start() {
    this.watched = new Set(); // a new connection watches nothing yet
    await this.refreshList().catch(this.onError);
    if (this.selected) await this.select(this.selected).catch(this.onError);
  }

  /** This run's episodes (policy.list), then earlier ones from their records (policy.records). */
  async refreshList() {
    const { episodes } = await this.rpc.call('policy.list');
    for (const s of episodes) {
      this.summaries.set(s.id, { ...this.summaries.get(s.id), ...s });
      // Each running episode's events stream here once (watching again after a reconnect).
      if (!FINAL.has(s.state) && !this.watched.has(s.id)) {
        this.watched.add(s.id);
        await this.rpc.call('policy.watch', { id: s.id }).catch((err) => {
          this.watched.delete(s.id);
          this.onError(err);
        });
      }
    }
    const live = new Set(episodes.map((s) => s.id));
    const { episodes: records } = await this.rpc.call('policy.records', { limit: 50 });
    const past = records.filter((r) => !live.has(r.id)).map((r) => ({ ...r, past: true }));
    const list = $('episode-list');
    list.replaceChildren(
      ...[...episodes.slice().reverse(), ...past].map((s) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.className = 'episode-item';
        b.dataset.id = s.id;
        b.dataset.state = s.state;
        b.textContent = `${s.past ? 'record · ' : ''}${s.id} · ${s.robot} · ${s.state ?? 'unfinished'} · ${s.instruction}`;
        b.addEventListener('click', () => this.select(s.id).catch(this.onError));
        return b;
      }),
    );
  }

  /** A recorded episode of an earlier run: read-only, from its record. */
  async selectRecord(id) {
    const r = await this.rpc.call('policy.record', { id, last: true, limit: MAX_EVENTS });
    this.keep(id, r.events, earlierThan(r.events));
    this.setSummary({ ...r.episode, id, state: r.episode.state ?? 'unfinished', past: true });
    this.render();
  }

  async select(id) {
    this.selected = id;
    const known = this.summaries.get(id);
    if (!known || known.past) return this.selectRecord(id);
    let got;
    try {
      // The last MAX_EVENTS only: the page keeps no more, and a long record is hundreds of MB.
      got = await this.rpc.call('policy.get', { id, events: true, last: true, limit: MAX_EVENTS });
    } catch {
      // The daemon keeps the last 50 ended episodes in memory; the record of an older one remains.
      return this.selectRecord(id);
    }
    // Recorded events first, then any notified since that the record did not have yet.
    const seen = new Set(got.events.map((e) => e.seq));
    const first = got.events[0]?.seq ?? Number.NEGATIVE_INFINITY;
    const notified = (this.events.get(id) ?? []).filter((e) => !seen.has(e.seq) && e.seq > first);
    this.keep(id, [...got.events, ...notified], earlierThan(got.events));
    this.setSummary(got);
    this.render();
  }

  setSummary(s) {
    this.summaries.set(s.id, { ...this.summaries.get(s.id), ...s });
    if (s.id !== this.selected) return;
    $('episode-view').hidden = false;
    $('episode-title').textContent = `${s.id}: ${s.instruction}`;
    const state = $('episode-state');
    state.textContent = s.paused ? `${s.state} (paused)` : s.state;
    state.dataset.state = s.state;
    state.title = s.reason ?? '';
    const u = s.used ?? {};
    const b = s.budget ?? {};
    $('episode-budget').textContent =
      `decisions ${u.decisions ?? 0}/${b.decisions ?? '∞'} · ${(u.wall_s ?? 0).toFixed(1)}/${b.wall_s ?? '∞'} s · tokens ${u.prompt_tokens ?? 0}+${u.completion_tokens ?? 0}`;
    // An earlier run's record is read-only, finished or not.
    const running = !FINAL.has(s.state) && !s.past;
    for (const b2 of ['episode-pause', 'episode-resume', 'episode-stop', 'feedback-form']) $(b2).hidden = !running;
  }

  onEvent(e) {
    const list = this.events.get(e.episode) ?? [];
    const earlier = this.earlier.get(e.episode);
    if (e.seq <= earlier?.seq || list.some((x) => x.seq === e.seq)) return;
    list.push(e);
    this.keep(e.episode, list, earlier);
    const s = this.summaries.get(e.episode);
    if (s) {
      if (e.type === 'state') s.state = e.state;
      if (e.type === 'finished') Object.assign(s, { state: e.state, used: e.used });
      if (e.used) s.used = e.used;
      if (e.type === 'paused' || e.type === 'resumed') s.paused = e.type === 'paused';
      this.setSummary(s);
    }
    if (e.episode === this.selected) this.showConfirm();
    if (e.type === 'finished' || e.type === 'started') this.refreshList().catch(this.onError);
    if (e.episode === this.selected) {
      this.append(e, true);
      this.bound();
    } else if (e.type === 'finished') {
      // Read again (policy.get) if it is selected later.
      this.events.delete(e.episode);
      this.earlier.delete(e.episode);
    }
  }

  append(e, images) {
    const li = document.createElement('li');
    li.dataset.type = e.type;
    li.dataset.seq = String(e.seq);
    if (e.status) li.dataset.status = e.status;
    const t = document.createElement('time');
    t.textContent = `${(e.t ?? 0).toFixed(2)} s`;
    li.append(t, document.createTextNode(` ${describe(e)}`));
    if (e.type === 'observation')
      for (const image of e.images ?? []) li.append(images ? this.thumbnail(e.episode, image) : unshown(image));
    $('timeline').append(li);
  }

  /** The timeline within its bounds: the last MAX_EVENTS lines, MAX_THUMBS images, the rest counted. */
  bound() {
    const timeline = $('timeline');
    const lines = timeline.querySelectorAll(':scope > li[data-seq]');
    for (let i = 0; i < lines.length - MAX_EVENTS; i++) lines[i].remove();
    const imgs = [...timeline.querySelectorAll('img.thumb')];
    for (const img of imgs.slice(0, Math.max(0, imgs.length - MAX_THUMBS))) img.replaceWith(unshown(img.alt));
    // Only the images on the page are kept.
    const shown = new Set([...timeline.querySelectorAll('img.thumb')].map((img) => img.dataset.key));
    for (const key of this.thumbs.keys()) if (!shown.has(key)) this.thumbs.delete(key);
    const count = this.earlier.get(this.selected)?.count ?? 0;
    let note = timeline.querySelector(':scope > li.earlier');
    if (count > 0 && !note) {
      note = document.createElement('li');
      note.className = 'earlier';
      timeline.prepend(note);
    }
    if (note) note.textContent = `${count} earlier event${count === 1 ? '' : 's'} not shown`;
    note?.toggleAttribute('hidden', count === 0);
  }

  /** An observation image of the record, fetched once (policy.image). */
  thumbnail(id, image) {
    const img = document.createElement('img');
    img.className = 'thumb';
    img.alt = image;
    img.title = image;
    const key = `${id}/${image}`;
    img.dataset.key = key;
    if (!this.thumbs.has(key))
      this.thumbs.set(
        key,
        this.rpc.call('policy.image', { id, image }).then((r) => r.data_url),
      );
    this.thumbs.get(key).then(
      (url) => (img.src = url),
      () => img.remove(),
    );
    return img;
  }

  render() {
    $('timeline').replaceChildren();
    const events = this.events.get(this.selected) ?? [];
    // Images are fetched for the newest observations only.
    const withImages = new Set();
    let images = 0;
    for (let i = events.length - 1; i >= 0 && images < MAX_THUMBS; i--)
      if (events[i].type === 'observation' && events[i].images?.length) {
        withImages.add(events[i]);
        images += events[i].images.length;
      }
    for (const e of events) this.append(e, withImages.has(e));
    this.bound();
    this.showConfirm();
  }

  /** Confirm / Reject while the selected episode of this run waits for its operator check. */
  showConfirm() {
    const s = this.summaries.get(this.selected);
    const events = this.events.get(this.selected) ?? [];
    const last = events.findLast((e) => ['check_pending', 'check', 'finished'].includes(e.type));
    $('confirm-form').hidden = !(s && !s.past && !FINAL.has(s.state) && last?.type === 'check_pending');
  }
}
