"""onnx_writer.py: a minimal protobuf writer for hand-built ONNX graphs in
the igrun tests (tests/cli/igrun_models.py, igrun_cnn.py): fields, nodes,
attributes, tensors and value infos, byte for byte as onnx.proto lays them."""
import struct

import numpy as np


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def fld(num, payload):
    """A length-delimited field (bytes, strings, messages)."""
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def fint(num, v):
    return varint(num << 3) + varint(v & 0xFFFFFFFFFFFFFFFF)


def ffloat(num, v):
    return varint(num << 3 | 5) + struct.pack("<f", v)


def attr_i(name, v):
    return fld(1, name) + fint(3, v) + fint(20, 2)  # type INT


def attr_f(name, v):
    return fld(1, name) + ffloat(2, v) + fint(20, 1)  # type FLOAT


def attr_s(name, v):
    return fld(1, name) + fld(4, v) + fint(20, 3)  # type STRING


def node(op, ins, outs, name, attrs=()):
    b = b"".join(fld(1, i) for i in ins) + b"".join(fld(2, o) for o in outs)
    return b + fld(3, name) + fld(4, op) + b"".join(fld(5, a) for a in attrs)


def tensor(name, arr, dtype=1):
    arr = np.asarray(arr)
    b = b"".join(fint(1, n) for n in arr.shape) + fint(2, dtype) + fld(8, name)
    raw = arr.astype({1: "<f4", 3: "i1"}[dtype]).tobytes()
    return b + fld(9, raw)


def value_info(name, dims):
    """A float tensor input or output of the given dimensions."""
    shape = b"".join(fld(1, fint(1, n)) for n in dims)
    return fld(1, name) + fld(2, fld(1, fint(1, 1) + fld(2, shape)))
