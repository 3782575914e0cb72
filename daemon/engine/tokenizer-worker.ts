// The worker side of TokenizerThread: loads the model folder's tokenizer once and encodes the
// texts it is sent, replying with the ids (transferred, not copied) or the error.
import { parentPort, workerData } from 'node:worker_threads';
import type { EncodeReply, EncodeRequest } from './tokenizer-thread.js';
import { TextTokenizer } from './tokenizer.js';

const tokenizer = TextTokenizer.fromDir((workerData as { dir: string }).dir, { offThread: false });
// A folder that fails to load fails each request with the load error (not an unhandled rejection).
tokenizer.catch(() => undefined);

parentPort!.on('message', (m: EncodeRequest) => {
  tokenizer.then(
    (t) => {
      const ids = Int32Array.from(t.encode(m.text));
      parentPort!.postMessage({ id: m.id, ids } satisfies EncodeReply, [ids.buffer]);
    },
    (e: Error) => parentPort!.postMessage({ id: m.id, error: e.message } satisfies EncodeReply),
  );
});
