// A response body read up to a byte cap: a server (or anything posing as one) can answer with
// gigabytes, and res.text() would hold them all before the JSON parse even starts.

/** Default cap on a provider's answer: far above any real chat completion, far below harm. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export type BoundedBody = { ok: true; text: string } | { ok: false; bytes: number };

/** The body as UTF-8 text, or `{ok: false}` once it passes `cap` bytes (the stream is cancelled
 *  then, which closes the connection). A Content-Length over the cap fails before any read. */
export async function readBounded(res: Response, cap: number): Promise<BoundedBody> {
  const declared = Number(res.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > cap) {
    await res.body?.cancel().catch(() => undefined);
    return { ok: false, bytes: declared };
  }
  if (!res.body) return { ok: true, text: '' };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > cap) {
      await reader.cancel().catch(() => undefined);
      return { ok: false, bytes };
    }
    chunks.push(value);
  }
  return { ok: true, text: Buffer.concat(chunks).toString('utf8') };
}

/** 16777216 as "16777216 bytes (16 MiB)" for messages. */
export function showBytes(n: number): string {
  const mib = n / (1024 * 1024);
  return mib >= 1 && Number.isInteger(mib) ? `${n} bytes (${mib} MiB)` : `${n} bytes`;
}
