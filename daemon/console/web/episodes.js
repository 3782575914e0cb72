// Policy episodes: a start form, this run's episodes (policy.list), and the selected one's
// timeline (policy.get events, then policy.event notifications), budget, feedback, pause /
// resume / stop and the operator confirmation of a pending done.
const $ = (id) => document.getElementById(id);
const FINAL = new Set(['done', 'gave_up', 'budget_exhausted', 'stopped', 'failed']);
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
    case 'finished':
      return `finished: ${e.state}${e.reason ? ` (${e.reason})` : ''}`;
    default:
      return e.type;
  }
}

export class Episodes {
  constructor(rpc, onError) {
    this.rpc = rpc;
    this.onError = onError;
    this.events = new Map();
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
    const r = await this.rpc.call('policy.record', { id });
    this.events.set(id, r.events);
    this.setSummary({ ...r.episode, id, state: r.episode.state ?? 'unfinished', past: true });
    this.render();
  }

  async select(id) {
    this.selected = id;
    const known = this.summaries.get(id);
    if (!known || known.past) return this.selectRecord(id);
    let got;
    try {
      got = await this.rpc.call('policy.get', { id, events: true });
    } catch {
      // The daemon keeps the last 50 ended episodes in memory; the record of an older one remains.
      return this.selectRecord(id);
    }
    // Recorded events first, then any notified since that the record did not have yet.
    const seen = new Set(got.events.map((e) => e.seq));
    this.events.set(id, [...got.events, ...(this.events.get(id) ?? []).filter((e) => !seen.has(e.seq))]);
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
    if (list.some((x) => x.seq === e.seq)) return;
    list.push(e);
    this.events.set(e.episode, list);
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
    if (e.episode === this.selected) this.append(e);
  }

  append(e) {
    const li = document.createElement('li');
    li.dataset.type = e.type;
    if (e.status) li.dataset.status = e.status;
    const t = document.createElement('time');
    t.textContent = `${(e.t ?? 0).toFixed(2)} s`;
    li.append(t, document.createTextNode(` ${describe(e)}`));
    if (e.type === 'observation') for (const image of e.images ?? []) li.append(this.thumbnail(e.episode, image));
    $('timeline').append(li);
  }

  /** An observation image of the record, fetched once (policy.image). */
  thumbnail(id, image) {
    const img = document.createElement('img');
    img.className = 'thumb';
    img.alt = image;
    img.title = image;
    const key = `${id}/${image}`;
    this.thumbs ??= new Map();
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
    for (const e of this.events.get(this.selected) ?? []) this.append(e);
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
