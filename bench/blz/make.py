"""Write the benchmark's carray with bcolz-zipline: N float64 prices (a random
walk in cents, as zipline's bundles hold), about 1 GB, bcolz's default
chunk length and compression (blosclz 5, shuffle); and the same values raw.

    make.py DIR [N]      DIR/prices.bcolz, DIR/prices.raw
"""
import os
import sys

import bcolz
import numpy as np

d = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 128 * 1024 * 1024
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(42)
c = bcolz.carray(np.empty(0, dtype="f8"), rootdir=os.path.join(d, "prices.bcolz"), mode="w", expectedlen=n)
last = 100.0
with open(os.path.join(d, "prices.raw"), "wb") as raw:
    step = 8 * 1024 * 1024
    for start in range(0, n, step):
        m = min(step, n - start)
        walk = last + np.cumsum(rng.integers(-3, 4, m)) * 0.01
        walk = np.round(walk, 2)
        last = walk[-1]
        c.append(walk)
        walk.tofile(raw)
c.flush()
print(f"wrote {n} items, chunklen {c.chunklen}, {c.nbytes} -> {c.cbytes} bytes")
