"""The python-blosc2 side of tests/extras.rs: c-blosc2 3.x's b2nd (embedded in
python-blosc2) as the reference for concatenate, expand_dims, nans, chunk
lists and arrays inside larger files.

    python extras.py DIR

reads DIR/cases (one case a line, tokens separated by spaces; a tuple is
written "1,2,3", the empty tuple "-") and writes DIR/results, one line per
case: "NAME key=value ...". Arrays come and go as C-order bytes in
DIR/NAME.*.bin. A case that python-blosc2 refuses reports "error=...".

    nchunks NAME DTYPE SHAPE CHUNKS BLOCKS START STOP
        -> chunks=LIST       (blosc2.get_slice_nchunks)
    expand NAME DTYPE SHAPE CHUNKS BLOCKS AXIS      (input NAME.in.bin)
        -> shape=TUPLE, NAME.out.bin            (blosc2.expand_dims)
    concat NAME DTYPE SHAPEA SHAPEB AXIS CHUNKS BLOCKS  (NAME.a.bin, NAME.b.bin)
        -> shape=TUPLE, NAME.out.bin            (blosc2.concat)
    nans NAME DTYPE SHAPE CHUNKS BLOCKS
        -> dtype=D shape=TUPLE allnan=0|1
    open NAME PATH OFFSET
        -> dtype=D shape=TUPLE, NAME.out.bin    (blosc2.open(PATH, offset=OFFSET))
"""

import os
import sys

import blosc2
import numpy as np


def tup(s):
    return () if s == "-" else tuple(int(x) for x in s.split(","))


def show(t):
    return ",".join(str(x) for x in t) if len(t) else "-"


def load(d, name, dtype, shape):
    with open(os.path.join(d, name), "rb") as f:
        return np.frombuffer(f.read(), dtype=dtype).reshape(shape)


def save(d, name, arr):
    with open(os.path.join(d, name + ".out.bin"), "wb") as f:
        f.write(np.ascontiguousarray(arr).tobytes())


def run(d, op, name, args):
    if op == "nchunks":
        dtype, shape, chunks, blocks, start, stop = args
        shape, start, stop = tup(shape), tup(start), tup(stop)
        data = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
        a = blosc2.asarray(data, chunks=tup(chunks), blocks=tup(blocks))
        key = tuple(slice(b, e) for b, e in zip(start, stop))
        return "chunks=" + show(tuple(int(x) for x in blosc2.get_slice_nchunks(a, key)))
    if op == "expand":
        dtype, shape, chunks, blocks, axis = args
        a = blosc2.asarray(load(d, name + ".in.bin", dtype, tup(shape)), chunks=tup(chunks), blocks=tup(blocks))
        e = blosc2.expand_dims(a, int(axis))
        save(d, name, e[()])
        return "shape=" + show(e.shape)
    if op == "concat":
        dtype, sa, sb, axis, chunks, blocks = args
        kw = {"chunks": tup(chunks), "blocks": tup(blocks)}
        a = blosc2.asarray(load(d, name + ".a.bin", dtype, tup(sa)), **kw)
        b = blosc2.asarray(load(d, name + ".b.bin", dtype, tup(sb)), **kw)
        c = blosc2.concat([a, b], axis=int(axis))
        save(d, name, c[()])
        return f"shape={show(c.shape)} dtype={c.dtype.str}"
    if op == "nans":
        dtype, shape, chunks, blocks = args
        n = blosc2.nans(tup(shape), dtype=dtype, chunks=tup(chunks), blocks=tup(blocks))
        v = n[()]
        return f"dtype={n.dtype.str} shape={show(n.shape)} allnan={int(bool(np.isnan(v).all()))}"
    if op == "open":
        path, offset = args
        a = blosc2.open(path, offset=int(offset))
        save(d, name, a[()])
        return f"dtype={a.dtype.str} shape={show(a.shape)}"
    raise ValueError(f"unknown op {op}")


def main():
    d = sys.argv[1]
    out = []
    with open(os.path.join(d, "cases")) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            op, name, args = parts[0], parts[1], parts[2:]
            try:
                res = run(d, op, name, args)
            except Exception as e:  # reported, and the Rust side decides
                res = "error=" + type(e).__name__
            out.append(f"{name} {res}")
    with open(os.path.join(d, "results"), "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
