// Emergency stop: a classic script with no imports and its own WebSocket, so the button works
// when the console's modules fail to load or throw. Click or Esc sends robots.stop to every robot.
(() => {
  const button = document.getElementById('estop');
  const status = document.getElementById('estop-status');
  const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
  const pending = new Map();
  let ws = null;
  let nextId = 1;
  let opened = null;
  // How long a press waits for the daemon's answer before saying the stop is not confirmed: past
  // the daemon's own wait for the arms to rest (5 s), which it reports itself. Tests shorten it.
  const view = {
    connected: false,
    connections: 0,
    phase: 'idle',
    result: null,
    presses: 0,
    lastMs: null,
    timeoutMs: 8000,
  };
  globalThis.brainstemEstop = view;

  function show(phase, text) {
    view.phase = phase;
    status.textContent = text;
    status.dataset.phase = phase;
    button.dataset.phase = phase;
  }

  function connect() {
    if (ws) return opened;
    const sock = new WebSocket(url);
    ws = sock;
    opened = new Promise((resolve, reject) => {
      sock.addEventListener('open', () => {
        view.connections++;
        if (ws !== sock) return resolve(sock);
        view.connected = true;
        button.dataset.connected = 'true';
        if (view.phase === 'offline') show('idle', '');
        resolve(sock);
      });
      sock.addEventListener('close', () => {
        // Only this socket's calls fail; a socket set aside after a silent press closes quietly.
        for (const [id, p] of pending) {
          if (p.sock !== sock) continue;
          pending.delete(id);
          p.reject(new Error('connection closed'));
        }
        reject(new Error('cannot reach the daemon'));
        if (ws !== sock) return;
        view.connected = false;
        button.dataset.connected = 'false';
        // Whatever the last press showed, the line now says the e-stop is down (a stop in
        // flight reports its own failure).
        if (view.phase !== 'stopping' && view.phase !== 'offline') {
          const last = view.phase === 'idle' ? '' : ` Last: ${status.textContent}`;
          show('offline', `E-stop not connected to the daemon (retrying every second; reload to log in again).${last}`);
        }
        ws = null;
        setTimeout(connect, 1000);
      });
    });
    opened.catch(() => undefined);
    sock.addEventListener('message', (e) => {
      if (typeof e.data !== 'string') return;
      let m;
      try {
        m = JSON.parse(e.data);
      } catch {
        return;
      }
      const p = pending.get(m.id);
      if (!p) return;
      pending.delete(m.id);
      if (m.error) p.reject(new Error(m.error.message));
      else p.resolve(m.result);
    });
    return opened;
  }

  async function call(method, params) {
    // The socket this call waited for: a press set aside meanwhile must not move it to another.
    const sock = await connect();
    if (sock.readyState !== WebSocket.OPEN) throw new Error('the connection closed before the stop was sent');
    const id = `estop-${nextId++}`;
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, sock });
      try {
        sock.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      } catch (err) {
        pending.delete(id);
        reject(err);
      }
    });
  }

  /**
   * A connection that took a press and answered nothing may be half-open: the next press goes
   * over a new one. The old stays open a minute for a late answer, then is closed.
   */
  function setAside() {
    const old = ws;
    if (!old) return;
    ws = null;
    opened = null;
    setTimeout(() => old.close(), 60_000);
    connect();
  }

  /** One line per robot: at rest, or why not. */
  function describe(stopped) {
    if (stopped.length === 0) return 'No robots are served.';
    return stopped
      .map((s) => `${s.robot}: ${s.ok ? 'all arms at rest' : `${s.status}${s.message ? ` (${s.message})` : ''}`}`)
      .join('\n');
  }

  async function stopAll() {
    const press = ++view.presses;
    const pressed = performance.now();
    show('stopping', 'Stopping every arm…');
    // A connection that looks open but delivers nothing would leave the press waiting forever.
    const silent = setTimeout(() => {
      if (press !== view.presses) return;
      const s = view.timeoutMs / 1000;
      show(
        'unconfirmed',
        `STOP NOT CONFIRMED: no answer from the daemon in ${s} s. Use the hardware stop; STOP retries on a new connection.`,
      );
      setAside();
    }, view.timeoutMs);
    try {
      const r = await call('robots.stop', {});
      // Only the latest press is shown; its answer replaces a 'not confirmed' line if it comes late.
      if (press !== view.presses) return;
      view.result = r;
      view.lastMs = performance.now() - pressed;
      const rest = r.stopped.every((s) => s.ok);
      show(rest ? 'rest' : 'problem', `${rest ? 'STOPPED' : 'STOP SENT, CHECK'}: ${describe(r.stopped)}`);
    } catch (err) {
      if (press === view.presses) show('problem', `Stop failed: ${err.message}. Use the hardware stop.`);
    } finally {
      clearTimeout(silent);
    }
  }

  button.addEventListener('click', stopAll);
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && !e.repeat) {
      e.preventDefault();
      stopAll();
    }
  });
  connect();
})();
