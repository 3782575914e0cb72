// Closes an MQTT connection whose next packet declares more bytes than allowed, from its fixed
// header alone: aedes' parser buffers a whole packet (up to 256 MiB) before anyone sees it, and a
// client need not have logged in to send one.
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

export interface Refusal {
  declared: number;
  limit: number;
}

/** Follows fixed headers (type byte, 1–4 bytes of remaining length) across chunks. */
export class MqttFrameScanner {
  private state: 'type' | 'length' | 'body' = 'type';
  private length = 0;
  private multiplier = 1;
  private remaining = 0;
  /** Packets read whole so far. */
  packets = 0;

  /** `limit(i)`: the largest remaining length allowed for the i-th packet (0 = CONNECT). */
  constructor(private readonly limit: (index: number) => number) {}

  /** The declared remaining length that breaks its limit (-1: a length of more than 4 bytes), else undefined. */
  scan(chunk: Uint8Array): Refusal | undefined {
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'body') {
        const n = Math.min(this.remaining, chunk.length - i);
        this.remaining -= n;
        i += n;
        if (this.remaining === 0) this.next();
        continue;
      }
      const byte = chunk[i++]!;
      if (this.state === 'type') {
        this.state = 'length';
        this.length = 0;
        this.multiplier = 1;
        continue;
      }
      this.length += (byte & 0x7f) * this.multiplier;
      if (byte & 0x80) {
        this.multiplier *= 128;
        if (this.multiplier > 128 ** 3) return { declared: -1, limit: this.limit(this.packets) };
        continue;
      }
      const limit = this.limit(this.packets);
      if (this.length > limit) return { declared: this.length, limit };
      this.remaining = this.length;
      if (this.remaining === 0) this.next();
      else this.state = 'body';
    }
    return undefined;
  }

  private next(): void {
    this.state = 'type';
    this.packets++;
  }
}

/**
 * The socket as a stream that passes every byte through, closed (after `onRefused`) at the first
 * packet header over its limit, before the body is buffered.
 */
export function limitPackets(
  socket: Socket,
  limit: (index: number) => number,
  onRefused: (refusal: Refusal) => void,
): Duplex {
  const scanner = new MqttFrameScanner(limit);
  const guarded = new Duplex({
    read() {
      socket.resume();
    },
    write(chunk, _encoding, done) {
      socket.write(chunk, done);
    },
    final(done) {
      socket.end(done);
    },
    destroy(err, done) {
      socket.destroy();
      done(err);
    },
  });
  socket.on('data', (chunk: Buffer) => {
    const refused = scanner.scan(chunk);
    if (refused !== undefined) {
      onRefused(refused);
      guarded.destroy();
    } else if (!guarded.push(chunk)) socket.pause();
  });
  socket.on('end', () => guarded.push(null));
  socket.on('error', (err) => guarded.destroy(err));
  socket.on('close', () => guarded.destroy());
  return guarded;
}
