// A minimal ONNX model writer: ModelProto → GraphProto (nodes, float/int64 initializers, typed
// inputs and outputs) encoded as protobuf by hand, enough for the synthetic vision towers.
// Field numbers from onnx/onnx.proto3: ModelProto ir_version 1, producer_name 2, graph 7,
// opset_import 8; GraphProto node 1, name 2, initializer 5, input 11, output 12; NodeProto
// input 1, output 2, name 3, op_type 4, attribute 5; AttributeProto name 1, f 2, i 3, type 20;
// TensorProto dims 1, data_type 2, name 8, raw_data 9; ValueInfoProto name 1, type 2;
// TypeProto tensor_type 1 → elem_type 1, shape 2 → dim 1 → dim_value 1 | dim_param 2.

export const ONNX_FLOAT = 1;
export const ONNX_INT64 = 7;

export type OnnxAttr = { name: string; f: number } | { name: string; i: number };

export interface OnnxNode {
  op: string;
  inputs: string[];
  outputs: string[];
  attrs?: OnnxAttr[];
}

export interface OnnxTensor {
  name: string;
  dims: number[];
  data: Float32Array | BigInt64Array;
}

/** A graph input or output: element type and dims (a string names a symbolic dim). */
export interface OnnxValue {
  name: string;
  type: typeof ONNX_FLOAT | typeof ONNX_INT64;
  dims: (number | string)[];
}

export interface OnnxGraph {
  name: string;
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  inputs: OnnxValue[];
  outputs: OnnxValue[];
  opset: number;
}

class Proto {
  private parts: Uint8Array[] = [];

  varint(field: number, value: number | bigint): this {
    this.key(field, 0);
    this.raw(varint(BigInt.asUintN(64, BigInt(value))));
    return this;
  }

  bytes(field: number, data: Uint8Array): this {
    this.key(field, 2);
    this.raw(varint(BigInt(data.length)));
    this.raw(data);
    return this;
  }

  string(field: number, s: string): this {
    return this.bytes(field, Buffer.from(s, 'utf8'));
  }

  message(field: number, m: Proto): this {
    return this.bytes(field, m.finish());
  }

  float(field: number, v: number): this {
    this.key(field, 5);
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.raw(b);
    return this;
  }

  finish(): Uint8Array {
    return Buffer.concat(this.parts);
  }

  private key(field: number, wire: number): void {
    this.raw(varint(BigInt(field * 8 + wire)));
  }

  private raw(b: Uint8Array): void {
    this.parts.push(b);
  }
}

function varint(v: bigint): Uint8Array {
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v > 0n) byte |= 0x80;
    out.push(byte);
  } while (v > 0n);
  return Uint8Array.from(out);
}

function tensorProto(t: OnnxTensor): Proto {
  const p = new Proto();
  for (const d of t.dims) p.varint(1, d);
  p.varint(2, t.data instanceof Float32Array ? ONNX_FLOAT : ONNX_INT64);
  p.string(8, t.name);
  return p.bytes(9, new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
}

function valueInfo(v: OnnxValue): Proto {
  const shape = new Proto();
  for (const d of v.dims) shape.message(1, typeof d === 'number' ? new Proto().varint(1, d) : new Proto().string(2, d));
  const tensorType = new Proto().varint(1, v.type).message(2, shape);
  return new Proto().string(1, v.name).message(2, new Proto().message(1, tensorType));
}

function nodeProto(n: OnnxNode, k: number): Proto {
  const p = new Proto();
  for (const i of n.inputs) p.string(1, i);
  for (const o of n.outputs) p.string(2, o);
  p.string(3, `${n.op}_${k}`).string(4, n.op);
  for (const a of n.attrs ?? []) {
    const ap = new Proto().string(1, a.name);
    if ('f' in a) ap.float(2, a.f).varint(20, 1);
    else ap.varint(3, a.i).varint(20, 2);
    p.message(5, ap);
  }
  return p;
}

/** The serialised ModelProto (IR version 8, default domain at `graph.opset`). */
export function encodeOnnxModel(graph: OnnxGraph, producer = 'brainstem'): Uint8Array {
  const g = new Proto();
  graph.nodes.forEach((n, k) => g.message(1, nodeProto(n, k)));
  g.string(2, graph.name);
  for (const t of graph.initializers) g.message(5, tensorProto(t));
  for (const v of graph.inputs) g.message(11, valueInfo(v));
  for (const v of graph.outputs) g.message(12, valueInfo(v));
  return new Proto()
    .varint(1, 8)
    .string(2, producer)
    .message(7, g)
    .message(8, new Proto().string(1, '').varint(2, graph.opset))
    .finish();
}
