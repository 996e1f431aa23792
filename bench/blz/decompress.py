"""The baseline's first half: read every chunk file of a bcolz carray and
decompress it with python-blosc (c-blosc 1.x), on NTHREADS threads.

    decompress.py CARRAY NTHREADS     prints the seconds taken
"""
import os
import sys
import time

import blosc

path, nthreads = sys.argv[1], int(sys.argv[2])
blosc.set_nthreads(nthreads)
data = os.path.join(path, "data")
files = sorted(os.listdir(data), key=lambda f: int(f[2:].split(".")[0]))
t = time.perf_counter()
total = 0
for f in files:
    with open(os.path.join(data, f), "rb") as fh:
        fh.read(16)  # the bcolz Bloscpack header
        total += len(blosc.decompress(fh.read()))
dt = time.perf_counter() - t
print(f"{dt:.3f} {total}")
