// The cameras panel: the latest colour frame of every camera of every robot (robots.frame as a
// data URL) with its age, refreshed about twice a second.
const el = (tag, cls, text) =>
  Object.assign(document.createElement(tag), cls ? { className: cls } : {}, text ? { textContent: text } : {});

export class Cameras {
  constructor(grid) {
    this.grid = grid;
    this.tiles = new Map();
    this.frames = 0;
  }

  tile(key) {
    let t = this.tiles.get(key);
    if (t) return t;
    this.grid.querySelector('.empty')?.remove();
    const fig = el('figure', 'camera');
    const img = el('img');
    img.alt = key;
    const cap = el('figcaption');
    fig.append(img, cap);
    this.grid.append(fig);
    t = { fig, img, cap, seq: null };
    this.tiles.set(key, t);
    return t;
  }

  /** One refresh of robot `robot`: its camera list, then each colour stream's latest frame. */
  async refresh(rpc, robot) {
    const { cameras } = await rpc.call('robots.cameras', { robot });
    for (const c of cameras) {
      if (c.kind !== 'color' || !c.meta) continue;
      const t = this.tile(`${robot}/${c.name}`);
      if (t.seq !== c.meta.seq) {
        const f = await rpc.call('robots.frame', { robot, camera: c.name });
        t.img.src = f.data_url;
        t.seq = f.meta.seq;
        this.frames++;
      }
      const rate = c.rate_hz ? `, ${c.rate_hz.toFixed(1)} Hz` : '';
      t.cap.textContent = `${robot} · ${c.name} · ${c.meta.width}×${c.meta.height} · ${c.age_s.toFixed(2)} s old${rate}`;
      t.fig.dataset.age = String(c.age_s);
      t.fig.classList.toggle('stale', c.age_s > 2);
    }
    return cameras;
  }

  /** The connection dropped at `at`: every frame shown is the last one received, and says so. */
  disconnected(at) {
    for (const t of this.tiles.values()) {
      t.fig.classList.add('stale');
      t.cap.textContent = `no new frames: disconnected from the daemon at ${at}; last: ${t.cap.textContent}`;
    }
  }
}
