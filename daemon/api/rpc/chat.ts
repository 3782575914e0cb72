// The `chat` and `cancel` JSON-RPC methods: `chat` takes an OpenAI chat-completions body, streams
// `chat.delta` notifications (OpenAI delta shape) and resolves with the whole message, usage and
// timings; `cancel` stops a running chat of the same connection by its request_id.
import { type ChatService, newId } from '../../engine/chat-service.js';
import { showValue } from '../../../robot/common/validation/values.js';
import { CancelledError } from '../../engine/request-queue.js';
import { anything, obj, record, str } from '../../../robot/common/validation/builders.js';
import { completionJson, eventDelta, timingsJson, usageJson } from '../openai/format.js';
import { outputFailure, toRpcError } from '../serving-errors.js';
import { progressNotifier } from './models.js';
import { RpcCode, RpcError, type RpcRegistry } from './registry.js';
import { linkedSignal } from '../../util/linked-signal.js';

export const DELTA_NOTIFICATION = 'chat.delta';

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

export function registerChatMethods(rpc: RpcRegistry, chat: ChatService): void {
  // Running chats: `${connection}/${request_id}` → its canceller.
  const running = new Map<string, AbortController>();

  rpc.register(
    'chat',
    record(anything()),
    async (params, ctx) => {
      const { request_id: rawId = newId('req-'), stream = true, ...body } = params;
      if (typeof rawId !== 'string' || !REQUEST_ID.test(rawId)) {
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: request_id: must be 1-128 printable ASCII characters without spaces, got ${showValue(rawId)}`,
          { type: 'invalid_request_error', code: 'invalid_pattern', field: 'request_id', rule: 'pattern' },
        );
      }
      if (typeof stream !== 'boolean')
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: stream: must be true or false, got ${showValue(stream)}`,
          { type: 'invalid_request_error', code: 'invalid_type', field: 'stream', rule: 'type' },
        );
      const key = `${ctx.connectionId}/${rawId}`;
      if (running.has(key))
        throw new RpcError(
          RpcCode.INVALID_PARAMS,
          `Invalid params: request_id: a chat with request_id ${showValue(rawId)} is already running on this connection`,
          { type: 'invalid_request_error', code: 'invalid_unique', field: 'request_id', rule: 'unique' },
        );
      const aborter = new AbortController();
      running.set(key, aborter);
      // The connection's signal lives as long as the connection (months): linked by hand, unlinked below.
      const link = linkedSignal(ctx.signal, aborter.signal);
      // The connection is the client: one app's socket, however many chats it multiplexes.
      const client = `ws:${ctx.connectionId}`;
      const gen = chat.run({ body, signal: link.signal, onProgress: progressNotifier(ctx), client });
      // The streamed tool calls' ids, which the final message repeats.
      const callIds: string[] = [];
      try {
        let step = await gen.next();
        while (!step.done) {
          if (stream) ctx.notify(DELTA_NOTIFICATION, { request_id: rawId, delta: eventDelta(step.value, callIds) });
          step = await gen.next();
        }
        const o = step.value;
        if (o.result.finishReason === 'error' && o.result.error) throw outputFailure(o.result.error);
        const choice = completionJson(o, callIds).choices[0]!;
        return {
          request_id: rawId,
          id: o.id,
          created: o.created,
          model: o.model,
          message: choice.message,
          finish_reason: o.result.finishReason,
          usage: usageJson(o),
          timings: timingsJson(o),
        };
      } catch (err) {
        // Cancelled before its turn came: the same answer as a cancel mid-stream, with nothing generated.
        if (err instanceof CancelledError && aborter.signal.aborted)
          return {
            request_id: rawId,
            message: { role: 'assistant', content: '' },
            finish_reason: 'cancelled',
            usage: null,
            timings: null,
          };
        throw toRpcError(err);
      } finally {
        running.delete(key);
        await gen.return(undefined as never).catch(() => undefined);
        link.unlink();
      }
    },
    `an OpenAI chat-completions body (+ request_id, keep_alive, prompt_cache_key); streams ${DELTA_NOTIFICATION} notifications, resolves with message, finish_reason, usage, timings`,
  );

  rpc.register(
    'cancel',
    obj({ request_id: str({ nonEmpty: true, doc: 'the request_id of a running chat' }) }),
    ({ request_id: id }, ctx) => {
      const aborter = running.get(`${ctx.connectionId}/${id}`);
      aborter?.abort();
      return { request_id: id, cancelled: aborter !== undefined };
    },
    'stops a running chat of this connection; the chat resolves with finish_reason "cancelled"',
  );
}
