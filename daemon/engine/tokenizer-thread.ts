// Encodes long texts on a worker thread (tokenizer-worker.ts), so a prompt of megabytes does not
// hold the event loop for seconds (~1 µs a character): robot heartbeats, state checks and other
// clients keep running meanwhile. The worker loads its own copy of the model folder's tokenizer
// on first use and exits after IDLE_MS without work; a worker that dies fails what it had in
// hand and is started again on the next request.
import { Worker } from 'node:worker_threads';

/** How long an idle worker (and its copy of the tokenizer) is kept (ms). */
const IDLE_MS = 60_000;

export interface EncodeRequest {
  id: number;
  text: string;
}

export type EncodeReply = { id: number; ids: Int32Array } | { id: number; error: string };

export class TokenizerThread {
  private worker: Worker | null = null;
  private next = 1;
  private readonly pending = new Map<number, { resolve(ids: Int32Array): void; reject(e: Error): void }>();
  private idle: NodeJS.Timeout | null = null;

  constructor(private readonly dir: string) {}

  /** Token ids of `text`, as TextTokenizer.encode gives them for the folder's tokenizer. */
  encode(text: string): Promise<Int32Array> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ensure().postMessage({ id, text } satisfies EncodeRequest);
    });
  }

  async close(): Promise<void> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
    this.failAll('the tokenizer thread stopped');
  }

  private ensure(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(new URL('./tokenizer-worker.js', import.meta.url), { workerData: { dir: this.dir } });
    w.unref();
    w.on('message', (m: EncodeReply) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if ('ids' in m) p?.resolve(m.ids);
      else p?.reject(new Error(m.error));
      if (this.pending.size === 0 && this.worker === w) {
        this.idle = setTimeout(() => void this.close(), IDLE_MS);
        this.idle.unref();
      }
    });
    const gone = (why: string) => {
      if (this.worker === w) this.worker = null;
      this.failAll(why);
    };
    w.on('error', (err) => gone(`the tokenizer thread failed: ${err.message}`));
    w.on('exit', (code) => gone(`the tokenizer thread exited (code ${code})`));
    this.worker = w;
    return w;
  }

  private failAll(message: string): void {
    for (const p of this.pending.values()) p.reject(new Error(message));
    this.pending.clear();
  }
}
