#!/usr/bin/env python3
"""Reductions of an array 4x larger than the memory they are allowed:
this package (`caterva`, the reduction in the Rust core, chunk by chunk, with
``max_memory`` = a quarter of the array) against python-blosc2's reductions
(its ``.sum(axis=...)``… on the same data) and NumPy on the array loaded in
memory (which needs all of it, and more).

Data: a float64 field of shape SHAPE (smooth plus noise, as
python/bench/slicing.py), chunks {64,64,64}, blocks {16,16,16}, ZSTD level 5
after a byte shuffle, contiguous frames on disk (in the page cache: written
just before). Each (library, reduction) runs in a fresh process, so its peak
RSS (``ru_maxrss``) is that reduction's alone, less the interpreter's,
NumPy's and the library's own (shown as "base": the peak after importing
and opening, before reducing). Times are medians of REPS runs in that
process; NumPy's row times the reduction of the loaded array, and the load
(decompressing the whole array with this package) apart.

    python/bench/reduce.py [--shape 512,512,512] [--threads 2] [--reps 3] [--out FILE]

run from the pycaterva venv (target/interop/pycaterva); python-blosc2 runs
in target/interop/blosc2.
"""

import argparse
import json
import os
import pathlib
import resource
import sys
import time

import numpy as np

from _driver import child, options, scratch, venv_python

OPS = [("sum(axis=0)", "sum", {"axis": 0}), ("mean()", "mean", {}), ("std(axis=1)", "std", {"axis": 1})]


def slab(shape, i0, i1):
    """Items [i0, i1) along axis 0 of the field."""
    i, j, k = np.ogrid[i0:i1, : shape[1], : shape[2]]
    noise = np.random.default_rng(i0).normal(0, 1e-3, (i1 - i0, shape[1], shape[2]))
    v = np.sin(i / 37) * np.cos(j / 53) + k / 400 + noise
    return np.round(v * 2**16) / 2**16


def peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write(a):
    """Write the field with the library a.lib, a slab of 64 at a time."""
    shape, path = a.shape, os.path.join(a.dir, a.lib)
    if a.lib == "caterva":
        import caterva as c

        arr = c.empty(shape, dtype="<f8", urlpath=path, contiguous=True, chunks=(64,) * 3, blocks=(16,) * 3,
                      codec=c.Codec.ZSTD, clevel=5, filters=[c.Filter.SHUFFLE], nthreads=a.threads, mode="w")
    else:
        import blosc2

        cparams = blosc2.CParams(codec=blosc2.Codec.ZSTD, clevel=5, typesize=8, nthreads=a.threads,
                                 filters=[blosc2.Filter.NOFILTER] * 5 + [blosc2.Filter.SHUFFLE])
        arr = blosc2.empty(shape, dtype=np.float64, urlpath=path, mode="w", chunks=(64,) * 3, blocks=(16,) * 3,
                           cparams=cparams)
    for i0 in range(0, shape[0], 64):
        i1 = min(i0 + 64, shape[0])
        arr[i0:i1] = slab(shape, i0, i1)
    print(json.dumps({"cratio": float(np.prod(shape) * 8 / os.path.getsize(path))}))


def run(a):
    """Time one reduction with a.lib; print JSON."""
    name, kw = a.op, json.loads(a.kw)
    path_c, path_b = os.path.join(a.dir, "caterva"), os.path.join(a.dir, "blosc2")
    budget = int(np.prod(a.shape) * 8 // 4)
    out = {}
    if a.lib == "caterva":
        import caterva as c

        arr = c.open(path_c, mode="r", nthreads=a.threads)
        out["version"] = f"caterva (this package) {c.__version__}, c-blosc2 {c.blosc2_version}"
        call = lambda: getattr(arr, name)(**kw, max_memory=budget)  # noqa: E731
    elif a.lib == "blosc2":
        import blosc2

        blosc2.set_nthreads(a.threads)
        arr = blosc2.open(path_b, mode="r", dparams=blosc2.DParams(nthreads=a.threads))
        out["version"] = f"python-blosc2 {blosc2.__version__}"
        call = lambda: getattr(arr, name)(**kw)  # noqa: E731
    else:
        import caterva as c

        out["version"] = f"NumPy {np.__version__} on the loaded array"
        h = c.open(path_c, mode="r", nthreads=a.threads)
        out["base"] = peak_mib()
        t = time.perf_counter()
        arr = h[...]
        out["load"] = time.perf_counter() - t
        call = lambda: getattr(arr, name)(**kw)  # noqa: E731
    out.setdefault("base", peak_mib())
    times, res = [], None
    for _ in range(a.reps):
        t = time.perf_counter()
        res = np.asarray(call())
        times.append(time.perf_counter() - t)
    out["time"] = float(np.median(times))
    out["peak"] = peak_mib()
    out["checksum"] = [float(np.sum(res, dtype=np.float64)), list(res.shape)]
    print(json.dumps(out))


def run_child(py, a, *extra):
    return child(py, __file__, [*options(a, "dir", "shape", "threads", "reps"), *extra])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="512,512,512")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", help="also write the markdown table there")
    ap.add_argument("--lib")
    ap.add_argument("--op")
    ap.add_argument("--kw")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--dir")
    a = ap.parse_args()
    a.shape = tuple(int(s) for s in a.shape.split(","))
    if a.write:
        return write(a)
    if a.lib:
        return run(a)
    libs = [("caterva", sys.executable), ("blosc2", venv_python("blosc2")), ("numpy", sys.executable)]
    libs = [(l, p) for l, p in libs if p is not None]
    results, cratio = {}, {}
    with scratch() as d:
        a.dir = d
        for lib, py in libs[:2]:
            t = time.perf_counter()
            cratio[lib] = run_child(py, a, "--write", "--lib", lib)["cratio"]
            print(f"wrote {lib} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
        for label, name, kw in OPS:
            for lib, py in libs:
                r = run_child(py, a, "--lib", lib, "--op", name, "--kw", json.dumps(kw))
                results[(label, lib)] = r
                print(f"{label} {lib}: {r['time']:.3f} s, peak {r['peak']:.0f} MiB", file=sys.stderr)
    nbytes = np.prod(a.shape) * 8
    lines = [
        f"Shape {a.shape} float64 ({nbytes / 2**30:.2f} GiB; compression ratio {cratio.get('caterva', 0):.1f} "
        f"here, {cratio.get('blosc2', 0):.1f} in python-blosc2), chunks 64^3, blocks 16^3, ZSTD 5 + shuffle, "
        f"contiguous frames on disk (page cache), {a.threads} threads; caterva's reductions with "
        f"max_memory = {nbytes / 4 / 2**20:.0f} MiB (a quarter of the array). Median of {a.reps} runs per "
        f"process; peak RSS of the process, and the part above its peak after imports and open ('base'). "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}.",
        "",
    ]
    versions = {lib: results[(OPS[0][0], lib)]["version"] for lib, _ in libs}
    lines += [f"- {lib}: {v}" for lib, v in versions.items()]
    lines += ["", "| reduction | library | time | vs caterva | peak RSS | above base |", "|---|---|---:|---:|---:|---:|"]
    for label, _, _ in OPS:
        ref = results[(label, "caterva")]
        for lib, _ in libs:
            r = results[(label, lib)]
            t = f"{r['time']:.3f} s" + (f" (+ load {r['load']:.2f} s)" if "load" in r else "")
            lines.append(f"| {label} | {lib} | {t} | {r['time'] / ref['time']:.2f}x | {r['peak']:.0f} MiB | "
                         f"{r['peak'] - r['base']:.0f} MiB |")
        sums = {lib: results[(label, lib)]["checksum"] for lib, _ in libs}
        base = sums["caterva"]
        for lib, s in sums.items():
            if s[1] != base[1] or not np.isclose(s[0], base[0], rtol=1e-6):
                lines.append(f"| {label} | **{lib} disagrees**: {s} vs {base} | | | | |")
    text = "\n".join(lines)
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
