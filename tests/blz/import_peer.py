"""The real BLZ writers for tests/blz_import.rs (and cli/tests/blz.rs): the
inputs bcolz-zipline and bloscpack write and read that caterva's import once
refused or misread (issue 26), and the values the writers read back.

    import_peer.py write DIR        write every case into DIR: <name>.bcolz or
                                    <name>.blp, and <name>.npy, the values
                                    bcolz or bloscpack reads from it
    import_peer.py big MB CHUNK DIR a float64 carray of MB megabytes in
                                    chunks of CHUNK MiB, DIR/big.bcolz
    import_peer.py rss CMD...       run CMD, print the children's peak RSS in KiB
    import_peer.py check DIR        read every <name>.out.blp caterva exported
                                    and compare it with <name>.npy
"""
import collections
import collections.abc
import os
import resource
import subprocess
import sys

# bloscpack 0.15 predates Python 3.10, where these aliases went away.
for _n in ("MutableMapping", "Mapping", "Iterable"):
    if not hasattr(collections, _n):
        setattr(collections, _n, getattr(collections.abc, _n))

import bcolz  # noqa: E402
import bloscpack  # noqa: E402
import bloscpack.append  # noqa: E402
import numpy as np  # noqa: E402


def save(d, name, a):
    np.save(os.path.join(d, name + ".npy"), a)


def read_blp(path):
    return bloscpack.unpack_ndarray_file(path)


def write(d):
    rng = np.random.default_rng(26)
    j = lambda name: os.path.join(d, name)  # noqa: E731
    # a ctable with an n-d column (rows of 3 floats) between two 1-d ones
    n = 1000
    ids = np.arange(n, dtype="i8") * 7
    xyz = rng.standard_normal((n, 3)).round(2)
    flag = rng.integers(0, 2, n).astype(bool)
    t = bcolz.ctable([ids, xyz, flag], names=["id", "xyz", "flag"], rootdir=j("ndcol.bcolz"), mode="w",
                     chunklen=64)
    t.flush()
    t = bcolz.open(j("ndcol.bcolz"), mode="r")
    save(d, "ndcol", t[:])
    for name in t.names:
        save(d, "ndcol." + name, t[name][:])
    # an empty structured carray: no chunk tells the item size
    # (bcolz-zipline cannot reopen a structured carray: `bcolz.open` fails on
    # its own dtype string, so the values are those written)
    c = bcolz.carray(np.zeros(0, dtype=[("a", "i4"), ("b", "f8")]), rootdir=j("empty_rec.bcolz"), mode="w")
    c.flush()
    save(d, "empty_rec", c[:])
    # structured .blp files (bloscpack records repr(dtype.descr)), one with
    # a subarray field (which bcolz cannot write: its dflt is not JSON)
    s = np.zeros(300, dtype=[("a", "<i4"), ("b", "<f8", (2,)), ("c", "S3")])
    s["a"], s["b"], s["c"] = np.arange(300), rng.standard_normal((300, 2)), b"xy"
    bloscpack.pack_ndarray_file(s, j("blp_struct.blp"), chunk_size=23 * 40)
    save(d, "blp_struct", read_blp(j("blp_struct.blp")))
    r = np.zeros(10, dtype=[("x", "<u2"), ("y", "<f4")])
    r["x"], r["y"] = np.arange(10), np.arange(10) / 4
    bloscpack.pack_ndarray_file(r, j("blp_struct_small.blp"))
    save(d, "blp_struct_small", read_blp(j("blp_struct_small.blp")))
    # empty arrays: bloscpack writes one chunk of 0 bytes
    for name, a in [("blp_empty", np.zeros(0)), ("blp_empty_nd", np.zeros((0, 4), dtype="i2")),
                    ("blp_empty_rec", np.zeros(0, dtype=r.dtype))]:
        bloscpack.pack_ndarray_file(a, j(name + ".blp"))
        save(d, name, read_blp(j(name + ".blp")))
    # 0-d arrays
    bloscpack.pack_ndarray_file(np.array(5.0), j("blp_0d.blp"))
    save(d, "blp_0d", read_blp(j("blp_0d.blp")))
    bloscpack.pack_ndarray_file(np.array(-3, dtype="i2"), j("blp_0d_i2.blp"))
    save(d, "blp_0d_i2", read_blp(j("blp_0d_i2.blp")))
    # plain metadata (no codec, no checksum) and no offsets, for tests to damage
    plain = bloscpack.MetadataArgs(meta_checksum="None", meta_codec="None")
    for name, a in [("blp_0d_plain", np.array(5.0)), ("blp_empty_plain", np.zeros(0))]:
        bloscpack.pack_ndarray_file(a, j(name + ".blp"), metadata_args=plain)
        save(d, name, read_blp(j(name + ".blp")))
    bloscpack.pack_bytes_file(b"0123456789" * 100, j("blp_no_offsets.blp"), chunk_size=300,
                              bloscpack_args=bloscpack.BloscpackArgs(offsets=False))
    # raw bytes that are not a whole number of the typesize (8 by default)
    raw = (b"abcdefghij" * 500) + b"xyz"
    bloscpack.pack_bytes_file(raw, j("blp_bytes.blp"), chunk_size=1000)
    save(d, "blp_bytes", np.frombuffer(bloscpack.unpack_bytes_file(j("blp_bytes.blp")), dtype="u1"))
    bloscpack.pack_bytes_file(b"q" * 7, j("blp_bytes_short.blp"), blosc_args=bloscpack.BloscArgs(typesize=4))
    save(d, "blp_bytes_short", np.frombuffer(bloscpack.unpack_bytes_file(j("blp_bytes_short.blp")), dtype="u1"))
    # bloscpack.append rewrites the last chunk in place (with its own default
    # Blosc arguments) and never truncates the file: when the new last chunk
    # compresses shorter, the old one's tail stays after it
    text = b"".join(b"row %d;" % i for i in range(700))[:3000]
    for name, extra in [("blp_append", b"x" * 500), ("blp_append_more", b"y" * 4500)]:
        with open(j(name + ".src"), "wb") as f:
            f.write(extra)
        bloscpack.pack_bytes_file(text, j(name + ".blp"), chunk_size=2000,
                                  blosc_args=bloscpack.BloscArgs(typesize=1, clevel=0),
                                  bloscpack_args=bloscpack.BloscpackArgs(checksum="crc32", max_app_chunks=4))
        before = os.path.getsize(j(name + ".blp"))
        bloscpack.append.append(j(name + ".blp"), j(name + ".src"))
        got = bloscpack.unpack_bytes_file(j(name + ".blp"))
        assert got == text + extra
        save(d, name, np.frombuffer(got, dtype="u1"))
        print(name, "size", before, "->", os.path.getsize(j(name + ".blp")))
    # a tiny-chunklen carray (issue 26: blocks of 4 items)
    a = np.cumsum(rng.integers(-3, 4, 50000)).astype("f8") / 8
    bcolz.carray(a, rootdir=j("tiny.bcolz"), mode="w", chunklen=4).flush()
    save(d, "tiny", bcolz.open(j("tiny.bcolz"), mode="r")[:])
    print("wrote", len(os.listdir(d)), "entries")


def big(mb, chunk_mib, d):
    """A compressible float64 carray of `mb` MB in chunks of `chunk_mib` MiB."""
    n = int(mb) * 1000 * 1000 // 8
    chunklen = int(chunk_mib) * (1 << 20) // 8
    c = bcolz.carray(np.zeros(0), rootdir=os.path.join(d, "big.bcolz"), mode="w", chunklen=chunklen,
                     expectedlen=n, cparams=bcolz.cparams(clevel=1, shuffle=1, cname="lz4"))
    step = chunklen
    for i in range(0, n, step):
        c.append(np.arange(i, min(n, i + step), dtype="f8") / 4)
    c.flush()
    print("big", c.shape, c.chunklen, c.nbytes)


def rss(cmd):
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.write(out.stdout.decode())
    if out.returncode != 0:
        sys.exit(f"{cmd} exited with {out.returncode}")
    print("peak_rss_kib", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def check(d):
    n = 0
    for f in sorted(os.listdir(d)):
        if f.endswith(".out.blp"):
            name = f[: -len(".out.blp")]
            want = np.load(os.path.join(d, name + ".npy"))
            got = read_blp(os.path.join(d, f))
            assert got.dtype == want.dtype and got.shape == want.shape, (f, got.dtype, want.dtype, got.shape)
            assert got.tobytes() == want.tobytes(), f
            n += 1
    print("checked", n)
    if n == 0:
        sys.exit("nothing to check")


if __name__ == "__main__":
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode == "write":
        write(rest[0])
    elif mode == "big":
        big(*rest)
    elif mode == "rss":
        rss(rest)
    else:
        check(rest[0])
