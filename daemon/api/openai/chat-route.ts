// POST /v1/chat/completions: OpenAI-compatible, streamed as SSE (ending in `data: [DONE]`) or
// in one body. Failures before the first token get their own HTTP status (400, 404, 429, 5xx);
// a failure mid-stream becomes an `error` event. A client that goes away aborts generation,
// which frees the model's turn and session.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { ChatEvent } from '../../engine/chat.js';
import { type ChatOutcome, type ChatService, newId } from '../../engine/chat-service.js';
import { isRecord, showValue } from '../../../robot/common/validation/values.js';
import { HttpError, readJson, sendJson } from '../http.js';
import type { HttpRoutes } from '../routes.js';
import { outputFailure, toHttpError } from '../serving-errors.js';
import { type ChunkHead, chunkJson, completionJson, eventDelta, finishJson, timingsJson, usageJson } from './format.js';

function streamFlags(body: Record<string, unknown>): { stream: boolean; includeUsage: boolean } {
  const { stream = false, stream_options: opts } = body;
  if (typeof stream !== 'boolean')
    throw new HttpError(
      400,
      `stream: must be true or false, got ${showValue(stream)}`,
      'invalid_request_error',
      'stream',
      { code: 'invalid_type' },
    );
  if (
    opts !== undefined &&
    opts !== null &&
    (!isRecord(opts) || (opts.include_usage !== undefined && typeof opts.include_usage !== 'boolean'))
  ) {
    throw new HttpError(
      400,
      `stream_options: must be {"include_usage": true|false}, got ${showValue(opts)}`,
      'invalid_request_error',
      'stream_options',
      { code: 'invalid_type' },
    );
  }
  return { stream, includeUsage: isRecord(opts) && opts.include_usage === true };
}

/** Where SSE events go: the response, and what to do with a client that stopped reading. */
export interface EventSink {
  res: ServerResponse;
  /** Ends waiting: the client went away or the daemon stops. */
  signal: AbortSignal;
  /** Milliseconds the reply may wait for the client to read, in all (a trickle reader included). */
  stallMs: number;
  /** Milliseconds waited so far (updated by send). */
  blockedMs?: number;
  /** The waits reached stallMs: cancel the request (its model's turn is freed). */
  onStall: () => void;
}

/** Writes one SSE event; waits for the socket to drain (a slow reader slows generation, not
 *  memory), stallMs in all: a client that reads little or nothing must not hold a model's turn. */
export async function send(sink: EventSink, data: unknown): Promise<void> {
  const { res, signal } = sink;
  if (res.destroyed || res.writableEnded) return;
  if (res.write(`data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`) || signal.aborted) return;
  // Only under backpressure: one timer and one listener per wait, both gone when it ends.
  const wait = new AbortController();
  const started = performance.now();
  const timer = setTimeout(() => wait.abort('stalled'), Math.max(0, sink.stallMs - (sink.blockedMs ?? 0)));
  const gone = () => wait.abort('gone');
  signal.addEventListener('abort', gone, { once: true });
  try {
    await once(res, 'drain', { signal: wait.signal });
  } catch {
    if (wait.signal.reason === 'stalled') sink.onStall();
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', gone);
    sink.blockedMs = (sink.blockedMs ?? 0) + performance.now() - started;
  }
}

async function streamCompletion(
  sink: EventSink,
  gen: AsyncGenerator<ChatEvent, ChatOutcome>,
  head: ChunkHead,
  includeUsage: boolean,
): Promise<void> {
  const { res } = sink;
  // The first step runs queueing, loading and prefill: errors there still get a status code.
  let step = await gen.next();
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  await send(sink, chunkJson(head, { role: 'assistant', content: '' }));
  try {
    while (!step.done) {
      await send(sink, chunkJson(head, eventDelta(step.value)));
      step = await gen.next();
    }
    const o = step.value;
    if (o.result.finishReason === 'error' && o.result.error)
      await send(sink, { error: outputFailure(o.result.error).body() });
    else {
      const totals = { usage: usageJson(o), timings: timingsJson(o) };
      // Usage once: on the finish chunk, or (include_usage, as OpenAI) only on the chunk after it.
      const finishTotals = includeUsage ? { timings: totals.timings } : totals;
      await send(sink, chunkJson(head, {}, finishJson(o.result.finishReason), finishTotals));
      if (includeUsage)
        await send(sink, {
          id: head.id,
          object: 'chat.completion.chunk',
          created: head.created,
          model: head.model,
          choices: [],
          ...totals,
        });
    }
  } catch (err) {
    await send(sink, { error: toHttpError(err).body() });
  }
  await send(sink, '[DONE]');
  res.end();
}

export function registerChatRoute(routes: HttpRoutes, chat: ChatService): void {
  routes.add({
    method: 'POST',
    path: '/v1/chat/completions',
    handler: async (req, res, ctx) => {
      const body = await readJson(req, ctx.maxBodyBytes, ctx.maxJsonDepth);
      if (!isRecord(body)) throw new HttpError(400, `the request body must be a JSON object, got ${showValue(body)}`);
      const { stream, includeUsage } = streamFlags(body);
      const aborter = new AbortController();
      // Writes stop waiting for a client that stopped reading when it goes or the daemon stops
      // (the generation itself ends through its lease then, with an error, not as cancelled).
      const writes = new AbortController();
      const onClose = () => {
        if (res.writableFinished) return;
        aborter.abort();
        writes.abort();
      };
      res.on('close', onClose);
      const stopping = chat.stopping;
      const onStop = () => writes.abort();
      stopping.addEventListener('abort', onStop, { once: true });
      const head: ChunkHead = {
        id: newId('chatcmpl-'),
        created: Math.floor(Date.now() / 1000),
        model: chat.modelName(body.model),
      };
      // The connection is the client: every app shares the one token and loopback apps one address.
      const client = `http:${req.socket?.remoteAddress}:${req.socket?.remotePort}`;
      const gen = chat.run({ body, signal: aborter.signal, id: head.id, client });
      try {
        if (stream) {
          const onStall = () => {
            ctx.log.warn(
              { id: head.id },
              'chat stream: the client kept the reply waiting for server.http_stall_ms in all; cancelled',
            );
            onClose();
            res.destroy();
          };
          const sink = { res, signal: writes.signal, stallMs: ctx.stallMs, onStall };
          return await streamCompletion(sink, gen, head, includeUsage);
        }
        let step = await gen.next();
        while (!step.done) step = await gen.next();
        const o = step.value;
        if (o.result.finishReason === 'error' && o.result.error) throw outputFailure(o.result.error);
        sendJson(res, 200, completionJson(o));
      } catch (err) {
        throw toHttpError(err);
      } finally {
        res.off('close', onClose);
        stopping.removeEventListener('abort', onStop);
        // Ends the generator (and releases the model) if we left it early.
        await gen.return(undefined as never).catch(() => undefined);
      }
    },
  });
}
