// Two connected in-memory duplex streams: what one end writes, the other reads (Node 20 has no
// stream.duplexPair). Used to connect the daemon's MQTT client to the embedded broker without a
// socket, so a message crosses no extra event-loop turn.
import { Duplex } from 'node:stream';

export function streamPair(): [Duplex, Duplex] {
  const ends: Duplex[] = [];
  const end = (peer: () => Duplex) =>
    new Duplex({
      read() {},
      write(chunk, _encoding, done) {
        peer().push(chunk);
        done();
      },
      final(done) {
        peer().push(null);
        done();
      },
      destroy(err, done) {
        // A destroyed end closes its peer as a dropped socket would.
        const other = peer();
        if (!other.destroyed) other.destroy();
        done(err);
      },
    });
  ends.push(
    end(() => ends[1]!),
    end(() => ends[0]!),
  );
  return [ends[0]!, ends[1]!];
}
