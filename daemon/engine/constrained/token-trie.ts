// The vocabulary as a byte trie stored in depth-first order: node i's subtree is nodes
// [i+1, end[i]), so a walk that rejects a prefix skips every token sharing it with one jump.
export interface TokenVocab {
  /** Bytes each token id stands for; null = never produced under a grammar (control tokens). */
  bytes: ReadonlyArray<Uint8Array | null>;
  /** Tokens that end the output (allowed only once the grammar is complete). */
  endTokens: readonly number[];
}

export class TokenTrie {
  /** Byte on the edge into node i, its depth (1 = first byte), and the end of its subtree. */
  readonly byte: Uint8Array;
  readonly depth: Uint16Array;
  readonly end: Int32Array;
  /** Tokens whose bytes end exactly at node i: ids[tokFirst[i] .. tokFirst[i] + tokCount[i]). */
  readonly tokFirst: Int32Array;
  readonly tokCount: Uint16Array;
  readonly ids: Int32Array;
  /** Tokens at nodes before i (ids are in depth-first order: subtree i holds ids[tokBefore[i] .. tokBefore[end[i]])). */
  readonly tokBefore: Int32Array;
  /** 1 where every byte of subtree i is printable ASCII other than '"' and '\\' (plain JSON string text). */
  readonly plain: Uint8Array;
  readonly maxDepth: number;
  readonly size: number;

  constructor(readonly vocab: TokenVocab) {
    // Sort with the engine's native string order: each byte b as char b+1, then char 0 (so a
    // prefix sorts before its extensions), then the id in two 16-bit chars.
    const keys: string[] = [];
    vocab.bytes.forEach((b, id) => {
      if (!b || b.length === 0) return;
      let k = '';
      for (const x of b) k += String.fromCharCode(x + 1);
      keys.push(k + String.fromCharCode(0, id >>> 16, id & 0xffff));
    });
    keys.sort();
    const order = keys.map((k) => (k.charCodeAt(k.length - 2) << 16) | k.charCodeAt(k.length - 1));
    // Upper bound on nodes: total bytes.
    let cap = 0;
    for (const id of order) cap += vocab.bytes[id]!.length;
    const byte = new Uint8Array(cap);
    const depth = new Uint16Array(cap);
    const end = new Int32Array(cap);
    const tokFirst = new Int32Array(cap);
    const tokCount = new Uint16Array(cap);
    const path: number[] = [];
    let prev: Uint8Array = new Uint8Array(0);
    let n = 0;
    for (let k = 0; k < order.length; k++) {
      const t = vocab.bytes[order[k]]!;
      let l = 0;
      while (l < prev.length && l < t.length && prev[l] === t[l]) l++;
      while (path.length > l) end[path.pop()!] = n;
      for (let d = l; d < t.length; d++) {
        byte[n] = t[d];
        depth[n] = d + 1;
        path.push(n++);
      }
      // Sorted order puts equal byte strings next to each other, so a node's tokens are one run.
      const at = path[t.length - 1];
      if (tokCount[at] === 0) tokFirst[at] = k;
      tokCount[at]++;
      prev = t;
    }
    while (path.length > 0) end[path.pop()!] = n;
    this.byte = byte.slice(0, n);
    this.depth = depth.slice(0, n);
    this.end = end.slice(0, n);
    this.tokFirst = tokFirst.slice(0, n);
    this.tokCount = tokCount.slice(0, n);
    this.ids = Int32Array.from(order);
    this.tokBefore = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) this.tokBefore[i + 1] = this.tokBefore[i] + this.tokCount[i];
    // firstBad = the first node at or after i whose byte is not plain; subtree i is plain when
    // that lies at or beyond its end.
    this.plain = new Uint8Array(n);
    let firstBad = n;
    for (let i = n - 1; i >= 0; i--) {
      const b = this.byte[i];
      if (b < 0x20 || b > 0x7e || b === 0x22 || b === 0x5c) firstBad = i;
      this.plain[i] = firstBad >= this.end[i] ? 1 : 0;
    }
    let maxDepth = 0;
    for (const id of order) maxDepth = Math.max(maxDepth, vocab.bytes[id]!.length);
    this.maxDepth = maxDepth;
    this.size = n;
  }
}
