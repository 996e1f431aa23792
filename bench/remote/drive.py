"""One library's side of the remote benchmark (run.py starts it).

    python drive.py LIB ENDPOINT PROXY_STATS_URL OUT_JSON

LIB: caterva (ours, sparse frame, one object per chunk), zarr (zarr 3,
one object per chunk, obstore), zarr-sharded (zarr 3 shards of the same
size as caterva's chunks, holding chunks of caterva's block size),
tensorstore (zarr3, sharded the same way, TensorStore's s3 kvstore). Each
writes the benchmark array at s3://bench/<LIB> through ENDPOINT (the
latency proxy), then times the operations; every read is checked against
the source. For each operation: the median of its repetitions' seconds, and
the requests and bytes the proxy relayed for one repetition.
"""

import json
import sys
import time
import urllib.request

import numpy as np

LIB, ENDPOINT, STATS, OUT = sys.argv[1:5]
SHAPE = (192, 192, 192)
CHUNKS = (64, 64, 64)
BLOCKS = (16, 16, 16)
REPS = 7


def source():
    i, j, k = np.meshgrid(*(np.arange(n, dtype=np.float32) for n in SHAPE), indexing="ij")
    rng = np.random.default_rng(7)
    return (np.sin(i / 17) * np.cos(j / 23) * 100 + k / 3 + rng.normal(0, 0.01, SHAPE)).astype(np.float32)


def proxy(what):
    req = urllib.request.Request(f"{STATS}/__proxy/{what}", method="POST" if what == "reset" else "GET")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def opener():
    """(write(data), open() -> reader with __getitem__)."""
    if LIB == "caterva":
        import caterva as cat

        url = "s3://bench/caterva.b2nd"

        def write(data, n=""):
            cat.asarray(data, urlpath=f"s3://bench/caterva{n}.b2nd", chunks=CHUNKS, blocks=BLOCKS, contiguous=False, mode="w",
                        codec=cat.Codec.ZSTD, clevel=5, filters=[cat.Filter.SHUFFLE])

        return write, lambda: cat.open(url, mode="r")
    if LIB in ("zarr", "zarr-sharded"):
        import zarr
        from obstore.store import S3Store

        s3 = S3Store(
            "bench", prefix=LIB, endpoint=ENDPOINT, region="us-east-1", access_key_id="test",
            secret_access_key="test", client_options={"allow_http": True},
        )
        store = zarr.storage.ObjectStore(s3)
        blosc = zarr.codecs.BloscCodec(cname="zstd", clevel=5, shuffle="shuffle")

        def write(data, n=""):
            store = zarr.storage.ObjectStore(S3Store(
                "bench", prefix=LIB + n, endpoint=ENDPOINT, region="us-east-1", access_key_id="test",
                secret_access_key="test", client_options={"allow_http": True},
            ))
            if LIB == "zarr":
                z = zarr.create_array(store, shape=SHAPE, chunks=CHUNKS, dtype="f4", compressors=blosc, overwrite=True)
            else:
                z = zarr.create_array(
                    store, shape=SHAPE, shards=CHUNKS, chunks=BLOCKS, dtype="f4", compressors=blosc, overwrite=True
                )
            z[...] = data

        return write, lambda: zarr.open_array(store, mode="r")
    if LIB == "tensorstore":
        import tensorstore as ts

        kv = {"driver": "s3", "bucket": "bench", "path": "tensorstore/", "endpoint": ENDPOINT, "aws_region": "us-east-1"}
        codecs = [
            {"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(BLOCKS),
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle", "typesize": 4}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            }},
        ]

        class Reader:
            def __init__(self, t):
                self.t = t

            def __getitem__(self, sel):
                return self.t[sel].read().result()

        def write(data, n=""):
            t = ts.open({"driver": "zarr3", "kvstore": {**kv, "path": f"tensorstore{n}/"}, "metadata": {
                "shape": list(SHAPE), "data_type": "float32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(CHUNKS)}},
                "codecs": codecs}}, create=True, delete_existing=True).result()
            t.write(data).result()

        return write, lambda: Reader(ts.open({"driver": "zarr3", "kvstore": kv}, open=True).result())
    raise SystemExit(f"unknown library {LIB}")


def main():
    data = source()
    write, open_ = opener()
    rng = np.random.default_rng(11)
    boxes = [tuple(int(rng.integers(0, n - 8)) for n in SHAPE) for _ in range(300)]
    items = [tuple(int(rng.integers(0, n)) for n in SHAPE) for _ in range(100)]
    mid = SHAPE[0] // 2 + 3
    results = {}

    def measure(name, fn, reps=REPS, check=None):
        times, counted = [], None
        for r in range(reps):
            proxy("reset")
            t = time.perf_counter()
            got = fn()
            times.append(time.perf_counter() - t)
            if r == 0:
                counted = proxy("stats")
                if check is not None:
                    check(got)
        results[name] = {"s": float(np.median(times)), **counted}

    measure("write", lambda: write(data), reps=1)
    # Another new array, by the same process: what a library checks or
    # sets up once per process is done (ours: the server's conditional
    # writes, src/store/writers.rs).
    again = iter(range(1, 100))
    measure("write again", lambda: write(data, f"-{next(again)}"), reps=3)
    measure("open", open_)
    a = open_()

    def eq(want):
        def check(got):
            assert np.array_equal(np.asarray(got), want), f"{LIB}: a wrong read"
        return check

    for axis in range(3):
        sel = tuple(mid if d == axis else slice(None) for d in range(3))
        measure(f"plane {axis}", lambda sel=sel: a[sel], check=eq(data[sel]))

    def read_boxes():
        return [a[x:x + 8, y:y + 8, z:z + 8] for x, y, z in boxes]

    measure("300 boxes of 8^3", read_boxes, reps=3,
            check=lambda got: all(np.array_equal(g, data[x:x + 8, y:y + 8, z:z + 8]) for g, (x, y, z) in zip(got, boxes)) or (_ for _ in ()).throw(AssertionError("boxes")))

    def read_items():
        return [a[x:x + 1, y:y + 1, z:z + 1] for x, y, z in items]

    measure("100 single items", read_items, reps=3,
            check=lambda got: all(np.array_equal(g, data[x:x + 1, y:y + 1, z:z + 1]) for g, (x, y, z) in zip(got, items)) or (_ for _ in ()).throw(AssertionError("items")))
    measure("full read", lambda: a[...], reps=5, check=eq(data))
    with open(OUT, "w") as f:
        json.dump({"lib": LIB, "ops": results}, f)


if __name__ == "__main__":
    main()
