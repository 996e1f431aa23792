#!/usr/bin/env python3
"""The cross-library benchmark's orchestrator (bench/compare/README.md).

Run through bench/compare/run.sh, which builds caterva-rs and starts this
script with the virtual environment's Python (target/compare/venv). This
script installs the Python libraries it lacks (each on its own, a failure is
reported in the results), builds the C drivers, generates the datasets once
(cached in target/compare/data), runs every library on every dataset in its
own process, and writes the results file.
"""

import argparse
import datetime
import filecmp
import importlib.metadata
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
TARGET = os.path.join(ROOT, "target")
WORK = os.path.join(TARGET, "compare")
BIN = os.path.join(WORK, "bin")
DATA = os.path.join(WORK, "data")
ARRAYS = os.path.join(WORK, "arrays")

# What pip installs into the venv, per library (pinned: the versions the
# committed results were taken with). numpy is needed by this script itself.
PIP = {
    "numpy": ["numpy==2.4.6"],
    "python-blosc2": ["blosc2==4.14.1"],
    "zarr": ["zarr==3.1.6"],
    "h5py": ["h5py==3.16.0", "hdf5plugin==7.1.0"],
    "tiledb": ["tiledb==0.36.1"],
    "tensorstore": ["tensorstore==0.1.86"],
}
IMPORTS = {"numpy": ["numpy"], "python-blosc2": ["blosc2"], "zarr": ["zarr", "numcodecs"],
           "h5py": ["h5py", "hdf5plugin"], "tiledb": ["tiledb"], "tensorstore": ["tensorstore"]}

# The columns: id, heading, driver kind, what it needs installed.
LIBS = [
    ("caterva-frame", "caterva-rs frame (C)", "native-caterva", "caterva-frame", None),
    ("caterva-frame-sums", "caterva-rs frame, checksums (C)", "native-caterva", "caterva-frame-sums", None),
    ("caterva-frame-nosync", "caterva-rs frame, no sync (C)", "native-caterva", "caterva-frame-nosync", None),
    ("caterva-frame-tuned", "caterva-rs frame, tuned (C)", "native-caterva", "caterva-frame-tuned", None),
    ("caterva-sparse", "caterva-rs sparse dir (C)", "native-caterva", "caterva-sparse", None),
    ("b2nd2", "b2nd c-blosc2 2.15 (C)", "native-caterva", "b2nd", None),
    ("b2nd3", "b2nd c-blosc2 3.x (C)", "native-b2nd3", "b2nd", "python-blosc2"),
    ("python-blosc2", "python-blosc2 (Py)", "python", "python-blosc2", "python-blosc2"),
    ("zarr", "zarr v3 (Py)", "python", "zarr", "zarr"),
    ("zarr-sharded", "zarr v3 sharded (Py)", "python", "zarr-sharded", "zarr"),
    ("h5py", "h5py + Blosc2 (Py)", "python", "h5py", "h5py"),
    ("tiledb", "TileDB (Py)", "python", "tiledb", "tiledb"),
    ("tensorstore", "TensorStore zarr3 (Py)", "python", "tensorstore", "tensorstore"),
]
# --sweep: the C columns on c-blosc2, for every codec/filter combination in SWEEP.
SWEEP_LIBS = ["caterva-frame", "b2nd2", "b2nd3"]
SWEEP = [("lz4", "shuffle"), ("blosclz", "shuffle"), ("zstd", "shuffle"), ("lz4hc", "shuffle"),
         ("lz4", "bitshuffle"), ("lz4", "none")]
CODECS = ["lz4", "blosclz", "zstd", "lz4hc"]
FILTERS = ["shuffle", "bitshuffle", "none"]

# Per dataset: dtype, description, and the 'same' settings (every library
# stores with these chunks and blocks) for the full run and for --quick.
DATASETS = [
    ("int", "i8", "int64 0..n",
     dict(shape=(300, 745, 400), chunks=(50, 150, 100), blocks=(13, 21, 30)),
     dict(shape=(60, 149, 80), chunks=(30, 75, 40), blocks=(13, 21, 30))),
    ("float", "f8", "float64 smooth field + quantized noise",
     dict(shape=(300, 745, 400), chunks=(50, 150, 100), blocks=(13, 21, 30)),
     dict(shape=(60, 149, 80), chunks=(30, 75, 40), blocks=(13, 21, 30))),
    ("climate", "f4", "float32 temperature-like field (time, lat, lon), rounded to 0.01",
     dict(shape=(240, 721, 1440), chunks=(24, 180, 360), blocks=(4, 45, 90)),
     dict(shape=(24, 73, 144), chunks=(12, 37, 72), blocks=(4, 15, 30))),
    ("labels", "i4", "int32 label volume: 2,000 random boxes of constant labels over a background of 0",
     dict(shape=(200, 512, 512), chunks=(25, 128, 128), blocks=(5, 32, 64)),
     dict(shape=(40, 128, 128), chunks=(20, 64, 64), blocks=(5, 32, 32))),
    ("sparse", "f4", "float32 field, 98% zeros: Gaussian values at 2% of the items, in clusters",
     dict(shape=(200, 512, 512), chunks=(25, 128, 128), blocks=(5, 32, 64)),
     dict(shape=(40, 128, 128), chunks=(20, 64, 64), blocks=(5, 32, 32))),
]
DS = {d[0]: d for d in DATASETS}
# What the run does, per dataset (--quick: fewer repetitions and items).
FULL = dict(reps=5, write_reps=3, nboxes=300, nitems=200, npencils=9)
QUICK = dict(reps=3, write_reps=1, nboxes=300, nitems=50, npencils=9)
BOX = 16
DATA_VERSION = "v1"  # change when the generators below change: the cache is keyed by it

ROWS = [  # (op key, row label, unit: "s", "ms", "us", "MB", "x"; statistic of the raw times: median or max)
    ("write", "write, s", "s", "median"),
    ("file_bytes", "file, MB", "MB", None),
    ("ratio", "compression ratio", "x", None),
    ("open", "open, ms", "ms", "median"),
    ("full", "full read, ms", "ms", "median"),
    ("plane0", "plane [k, :, :], ms", "ms", "median"),
    ("plane1", "plane [:, k, :], ms", "ms", "median"),
    ("plane2", "plane [:, :, k], ms", "ms", "median"),
    ("pencil0", "pencil [:, j, k], ms (median of {npencils})", "ms", "median"),
    ("pencil0", "**pencil [:, j, k], max**, ms (1st call incl.)", "ms", "max"),
    ("pencil1", "pencil [i, :, k], ms (median of {npencils})", "ms", "median"),
    ("pencil1", "**pencil [i, :, k], max**, ms (1st call incl.)", "ms", "max"),
    ("pencil2", "pencil [i, j, :], ms (median of {npencils})", "ms", "median"),
    ("pencil2", "**pencil [i, j, :], max**, ms (1st call incl.)", "ms", "max"),
    ("boxes", "{nboxes} boxes 16³ (total), ms", "ms", "median"),
    ("item", "1-item read, µs", "us", "median"),
    ("overhead", "per-call overhead, µs", "us", "median"),
]
COLD_ROWS = [
    ("open_cold", "cold: open, ms", "ms", "median"),
    ("full_cold", "cold: full read, ms", "ms", "median"),
    ("plane0_cold", "cold: plane [k, :, :], ms", "ms", "median"),
    ("plane1_cold", "cold: plane [:, k, :], ms", "ms", "median"),
    ("plane2_cold", "cold: plane [:, :, k], ms", "ms", "median"),
    ("boxes_cold", "cold: {nboxes} boxes 16³, ms", "ms", "median"),
    ("item_cold", "cold: 1-item read, µs", "us", "median"),
]
# The rows of each --sweep table.
SWEEP_ROWS = ["write", "file_bytes", "full", "plane0", "plane1", "plane2", "pencil0", "pencil1", "pencil2",
              "boxes", "item"]


def log(msg):
    print(f"[compare {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


# ---------------------------------------------------------------- installation


def ensure_installed(name):
    """Install the pip packages of `name` unless they import; return None or why not."""
    check = "; ".join(f"import {m}" for m in IMPORTS[name])
    wanted = {p.split("==")[0]: p.split("==")[1] for p in PIP[name]}

    def ok():
        if sh([sys.executable, "-c", check]).returncode != 0:
            return False
        for pkg, ver in wanted.items():
            try:
                if importlib.metadata.version(pkg) != ver:
                    return False
            except importlib.metadata.PackageNotFoundError:
                return False
        return True

    if ok():
        return None
    log(f"installing {' '.join(PIP[name])}")
    r = sh([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PIP[name]])
    importlib.invalidate_caches()
    if r.returncode != 0 or not ok():
        lines = [x for x in (r.stderr + r.stdout).strip().splitlines() if x.strip()]
        why = lines[-1] if lines else "the module does not import after pip install"
        return f"pip install {' '.join(PIP[name])} failed: {why[:300]}"
    return None


def site_blosc2():
    """The blosc2 package directory (the wheel's libblosc2 and headers)."""
    r = sh([sys.executable, "-c", "import blosc2, os; print(os.path.dirname(blosc2.__file__))"])
    return r.stdout.strip() if r.returncode == 0 else None


# ---------------------------------------------------------------- C drivers


def opt_flags(lib):
    """The -O options the C compile units of `lib` were built with (from its DWARF producers)."""
    r = sh(["readelf", "--debug-dump=info", lib])
    if r.returncode != 0:
        return "unknown (readelf failed)"
    flags = set()
    units = 0
    for line in r.stdout.splitlines():
        if "DW_AT_producer" in line and "GNU C" in line:
            units += 1
            opts = [w for w in line.split() if w.startswith("-O")]
            flags.add(opts[-1] if opts else "no -O")
    if not units:
        return "unknown (no debug information)"
    return ", ".join(sorted(flags))


def stage_caterva():
    """Copy libcaterva.so and the c-blosc2 that the release profile built into target/compare/lib.

    build.rs copies into target/release the libblosc2 installed in
    target/blosc2, which every profile's (and, through a symlinked target/blosc2,
    every worktree's) blosc2-sys build overwrites: after a debug build it is
    c-blosc2 at -O0. blosc2-sys's own release build tree keeps the optimized
    one, and the drivers use that. Returns (lib dir, description) or (None, why not).
    """
    import glob

    cands = []
    for cache in glob.glob(os.path.join(TARGET, "release", "build", "blosc2-sys-*", "out", "build", "CMakeCache.txt")):
        with open(cache) as f:
            btype = next((ln.split("=", 1)[1].strip() for ln in f if ln.startswith("CMAKE_BUILD_TYPE")), "")
        blosc = os.path.join(os.path.dirname(cache), "blosc")
        real = [x for x in glob.glob(os.path.join(blosc, "libblosc2.so.*.*")) if not os.path.islink(x)]
        if btype in ("Release", "RelWithDebInfo") and real:
            cands.append((os.path.getmtime(real[0]), real[0], btype))
    caterva = os.path.join(TARGET, "release", "libcaterva.so")
    if not cands or not os.path.exists(caterva):
        return None, "no release build of libcaterva.so and of blosc2-sys under target/release (cargo build --release)"
    _, blosc, btype = max(cands)
    lib = os.path.join(WORK, "lib")
    shutil.rmtree(lib, ignore_errors=True)
    os.makedirs(lib)
    shutil.copy2(caterva, os.path.join(lib, "libcaterva.so"))
    os.symlink("libcaterva.so", os.path.join(lib, "libcaterva.so.0"))
    name = os.path.basename(blosc)  # libblosc2.so.2.15.3
    shutil.copy2(blosc, os.path.join(lib, name))
    soname = sh(["readelf", "-d", blosc]).stdout
    soname = next((ln.split("[")[1].rstrip("]") for ln in soname.splitlines() if "SONAME" in ln), "libblosc2.so.4")
    os.symlink(name, os.path.join(lib, soname))
    os.symlink(name, os.path.join(lib, "libblosc2.so"))
    desc = f"{btype}, compiled with {opt_flags(blosc)}"
    beside = os.path.join(TARGET, "release", soname)
    if os.path.exists(beside) and not filecmp.cmp(beside, blosc, shallow=False):
        desc += (f"; target/release/{soname} is another build (compiled with {opt_flags(beside)}), "
                 "not used")
    return lib, desc


def build_drivers(missing):
    """Build native-caterva and native-b2nd3; return ({driver: None or why not}, c-blosc2 2.15 build)."""
    os.makedirs(BIN, exist_ok=True)
    src = os.path.join(HERE, "native.c")
    out = {}
    lib, desc = stage_caterva()
    if lib is None:
        out["native-caterva"] = desc
    else:
        cmd = ["cc", "-O2", "-std=c99", "-Wall", "-Wextra", "-DWITH_CATERVA", "-I" + os.path.join(ROOT, "include"),
               "-I" + os.path.join(TARGET, "blosc2", "include"), src, "-L" + lib, "-Wl,-rpath," + lib,
               "-lcaterva", "-lblosc2", "-lm", "-o", os.path.join(BIN, "native-caterva")]
        r = sh(cmd)
        out["native-caterva"] = None if r.returncode == 0 else f"build failed: {r.stderr.strip()[-300:]}"
    if missing.get("python-blosc2"):
        out["native-b2nd3"] = "needs the python-blosc2 wheel (libblosc2 and headers): " + missing["python-blosc2"]
        return out, desc
    site = site_blosc2()
    if site is None:
        out["native-b2nd3"] = "python-blosc2 is not installed (not among the --only libraries)"
        return out, desc
    libdir, incdir = os.path.join(site, "lib"), os.path.join(site, "include")
    sonames = sorted(f for f in os.listdir(libdir) if f.startswith("libblosc2.so.")) if os.path.isdir(libdir) else []
    if not sonames or not os.path.isfile(os.path.join(incdir, "b2nd.h")):
        out["native-b2nd3"] = f"the blosc2 wheel at {site} has no lib/libblosc2.so.N or include/b2nd.h"
        return out, desc
    cmd = ["cc", "-O2", "-std=c99", "-Wall", "-Wextra", "-I" + incdir, src, "-L" + libdir, "-Wl,-rpath," + libdir,
           "-l:" + sonames[0], "-lm", "-o", os.path.join(BIN, "native-b2nd3")]
    r = sh(cmd)
    out["native-b2nd3"] = None if r.returncode == 0 else f"build failed: {r.stderr.strip()[-300:]}"
    return out, desc


# ---------------------------------------------------------------- data


def dataset_path(name, shape):
    return os.path.join(DATA, f"{name}-{'x'.join(map(str, shape))}-{DATA_VERSION}.bin")


def climate_slabs(shape):
    """The climate field, float32 (time, lat, lon), one time step at a time.

    280 + 25 cos(lat) + 10 sin(2 pi t / 24 + lon) plus noise correlated in
    space and time: an AR(1) in t (coefficient 0.9) of Gaussian noise on a
    grid 8 times coarser, interpolated bilinearly (3 K), plus fine noise
    (0.1 K), rounded to 0.01.
    """
    import numpy as np

    nt, ny, nx = shape
    rng = np.random.default_rng(20251126)
    lat = np.deg2rad(np.linspace(90.0, -90.0, ny))
    lon = np.linspace(0.0, 2 * np.pi, nx, endpoint=False)
    base = (280.0 + 25.0 * np.cos(lat))[:, None]
    cy, cx = ny // 8 + 2, nx // 8 + 2

    def interp(n, m):  # indices and weights to stretch m points over n
        x = np.linspace(0.0, m - 1.0, n)
        i0 = np.minimum(np.floor(x).astype(int), m - 2)
        return i0, i0 + 1, (x - i0)

    yi0, yi1, wy = interp(ny, cy)
    xi0, xi1, wx = interp(nx, cx)
    coarse = rng.normal(0.0, 1.0, (cy, cx))
    for t in range(nt):
        coarse = 0.9 * coarse + np.sqrt(1 - 0.81) * rng.normal(0.0, 1.0, (cy, cx))
        rows = coarse[yi0] * (1 - wy)[:, None] + coarse[yi1] * wy[:, None]
        smooth = rows[:, xi0] * (1 - wx) + rows[:, xi1] * wx
        a = base + 10.0 * np.sin(2 * np.pi * t / 24.0 + lon)[None, :] + 3.0 * smooth
        a += rng.normal(0.0, 0.1, (ny, nx))
        yield (np.round(a * 100.0) / 100.0).astype("<f4")


def generate(name, shape):
    """The dataset, generated once and cached: int64 0..n, the float64 field, the climate field, the
    label volume or the sparse field."""
    import numpy as np

    path = dataset_path(name, shape)
    if os.path.exists(path):
        return path
    log(f"generating {path}")
    os.makedirs(DATA, exist_ok=True)
    tmp = path + ".tmp"
    if name == "climate":
        with open(tmp, "wb") as f:
            for slab in climate_slabs(shape):
                slab.tofile(f)
        os.replace(tmp, path)
        return path
    if name == "int":
        a = np.arange(np.prod(shape), dtype="<i8").reshape(shape)
    elif name == "labels":
        # Random boxes (up to a tenth of each axis) of random labels painted
        # in order over zeros: large constant regions, sharp edges.
        rng = np.random.default_rng(20261129)
        a = np.zeros(shape, dtype="<i4")
        for label in range(1, 2001):
            lo = [int(rng.integers(0, n)) for n in shape]
            hi = [min(n, l + 1 + int(rng.integers(0, max(1, n // 10)))) for l, n in zip(lo, shape)]
            a[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]] = label
    elif name == "sparse":
        # Clusters: 2% of the items, chosen as small runs along the last axis
        # starting at random places, hold Gaussian values; the rest is 0.
        rng = np.random.default_rng(20261130)
        a = np.zeros(int(np.prod(shape)), dtype="<f4")
        n = a.size // 50
        starts = rng.integers(0, a.size - 8, n // 8)
        for off in range(8):
            a[starts + off] = rng.normal(0.0, 1.0, starts.size).astype("<f4")
        a = a.reshape(shape)
    else:
        # sin(i/37) cos(j/53) + k/400 plus Gaussian noise (sigma 1e-3) rounded to
        # multiples of 2^-16: smooth, with noisy low bits; ZSTD 5 + shuffle
        # compresses it about 2x.
        i, j, k = np.ogrid[: shape[0], : shape[1], : shape[2]]
        a = np.sin(i / 37.0) * np.cos(j / 53.0) + k / 400.0
        rng = np.random.default_rng(20240614)
        q = 2.0**-16
        a = a + np.round(rng.normal(0.0, 1e-3, shape) / q) * q
        a = np.ascontiguousarray(a, dtype="<f8")
    a.tofile(tmp)
    os.replace(tmp, path)
    return path


def positions_file(shape, nboxes, nitems, npencils):
    """Random box corners, item positions and pencils (fixed seeds), shared by all libraries.

    Boxes and items come from the same generator as before pencils existed
    (the same positions); pencils from their own: `pencil AXIS a b` reads the
    whole AXIS at (a, b) on the other two axes, in order.
    """
    import numpy as np

    path = os.path.join(DATA, f"positions-{'x'.join(map(str, shape))}-b{BOX}x{nboxes}-i{nitems}-p{npencils}"
                              f"-{DATA_VERSION}.txt")
    if os.path.exists(path):
        return path
    os.makedirs(DATA, exist_ok=True)
    rng = np.random.default_rng(0x5EED)
    with open(path + ".tmp", "w") as f:
        hi = np.array(shape) - BOX + 1
        for _ in range(nboxes):
            f.write("box %d %d %d\n" % tuple(rng.integers(0, hi)))
        for _ in range(nitems):
            f.write("item %d %d %d\n" % tuple(rng.integers(0, np.array(shape))))
        prng = np.random.default_rng(0x9E9C)
        for axis in range(3):
            others = [shape[d] for d in range(3) if d != axis]
            for _ in range(npencils):
                f.write("pencil %d %d %d\n" % (axis, *prng.integers(0, np.array(others))))
    os.replace(path + ".tmp", path)
    return path


def blosc2_defaults(shape, dtype):
    """python-blosc2's default chunks and blocks for an array (compute_chunks_blocks)."""
    r = sh([sys.executable, "-c", "import sys, blosc2, numpy as np; "
            f"c, b = blosc2.compute_chunks_blocks({tuple(shape)}, dtype=np.dtype('<{dtype}')); "
            "print(','.join(map(str, c)), ','.join(map(str, b)))"])
    if r.returncode != 0:
        return None
    c, b = r.stdout.split()
    return tuple(map(int, c.split(","))), tuple(map(int, b.split(",")))


# ---------------------------------------------------------------- running


def run_one(lib, ds, args, cfg, data, positions, codec, clevel, filt, tag=""):
    """Run one library on one dataset in its own process; return its parsed output."""
    lid, _, driver, libarg, _ = lib
    name, dtype = ds[0], ds[1]
    settings = cfg["ds"][name]
    os.makedirs(ARRAYS, exist_ok=True)
    path = os.path.join(ARRAYS, f"{lid}-{name}" + (".h5" if lid == "h5py" else ""))
    chunks, blocks = settings["chunks"], settings["blocks"]
    if args.defaults and lid in ("b2nd2", "b2nd3"):
        chunks, blocks = settings["b2nd_defaults"]
    common = ["--lib", libarg, "--data", data, "--dtype", dtype, "--shape", ",".join(map(str, settings["shape"])),
              "--chunks", ",".join(map(str, chunks)), "--blocks", ",".join(map(str, blocks)),
              "--threads", str(args.threads), "--reps", str(cfg["reps"]), "--write-reps", str(cfg["write_reps"]),
              "--positions", positions, "--box", str(BOX), "--path", path]
    if args.defaults:
        common.append("--defaults")
    else:
        common += ["--codec", codec, "--clevel", str(clevel), "--filter", filt]
    if args.cold:
        common.append("--cold")
    env = dict(os.environ)
    env.pop("BLOSC_NTHREADS", None)
    if driver == "python":
        cmd = [sys.executable, os.path.join(HERE, "pylibs.py"), *common]
        if lid == "h5py":
            env["BLOSC_NTHREADS"] = str(args.threads)  # hdf5plugin's Blosc2 filter has no other setting
    else:
        cmd = [os.path.join(BIN, driver), *common]
    log(f"{lid} on {name}{tag}")
    t0 = time.time()
    res = {"ops": {}, "fail": {}, "version": None, "notes": None, "cold": None, "error": None, "settings": None,
           "na": None}
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.timeout)
        stdout, stderr, rc = p.stdout, p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        stdout = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        stderr, rc = f"timed out after {args.timeout} s", -1
    for line in stdout.splitlines():
        try:
            o = json.loads(line)
        except json.JSONDecodeError:
            continue
        if "op" in o and "ms" in o:
            res["ops"][o["op"]] = o["ms"]
        elif "op" in o and "value" in o:
            res["ops"][o["op"]] = o["value"]
        elif "op" in o and "fail" in o:
            res["fail"][o["op"]] = o["fail"]
        else:
            for k in ("version", "notes", "cold", "settings", "na"):
                if k in o:
                    res[k] = o[k]
    if rc != 0:
        last = [x for x in stderr.strip().splitlines() if x.strip()]
        res["error"] = f"exit status {rc}: {last[-1][:300] if last else 'no message'}"
    shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else None
    if os.path.exists(path):
        os.remove(path)
    log(f"{lid} on {name}{tag}: {time.time() - t0:.0f} s" + (f" ({res['error']})" if res["error"] else "") +
        (f" (n/a: {res['na']})" if res["na"] else "") +
        (f" (FAIL: {', '.join(res['fail'])})" if res["fail"] else ""))
    return res


# ---------------------------------------------------------------- report


def write_footnotes(w, footnotes):
    """The footnotes of a results file, numbered as the cells cite them."""
    if footnotes:
        for i, f in enumerate(footnotes, 1):
            w(f"[^{i}]: {f}")
        w("")


def machine():
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = f"{int(line.split()[1]) / 1024**2:.0f} GiB"
    except OSError:
        pass
    fs = sh(["df", "-T", WORK]).stdout.strip().splitlines()
    fs = " ".join(fs[-1].split()[:2]) if fs else "?"
    nproc = sh(["nproc"]).stdout.strip() or str(os.cpu_count())
    return model, nproc, mem, fs


def commit():
    r = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"])
    c = r.stdout.strip() if r.returncode == 0 else "unknown"
    if c != "unknown" and sh(["git", "-C", ROOT, "diff", "--quiet", "HEAD", "--", "src", "bench", "include"]).returncode:
        c += " (with uncommitted changes)"
    return c


def fmt(m):
    return f"{m:.3f}" if m < 1 else f"{m:.2f}" if m < 10 else f"{m:.1f}" if m < 1000 else f"{m:.0f}"


def value(res, key, unit, stat, nbytes):
    """(text, number) for one cell: the median (or max) of the raw times, or the size."""
    if key == "ratio":
        fb = res["ops"].get("file_bytes")
        return (f"{nbytes / fb:.1f}", nbytes / fb) if fb else (None, None)
    v = res["ops"].get(key)
    if v is None:
        return None, None
    if unit == "MB":
        return fmt(v / 1e6), v / 1e6
    m = max(v) if stat == "max" else statistics.median(v)
    if unit == "s":
        m /= 1e3
    if unit == "us":
        m *= 1e3
    return fmt(m), m


def ds_bytes(cfg, name):
    shape = cfg["ds"][name]["shape"]
    return int(DS[name][1][1:]) * shape[0] * shape[1] * shape[2]


def compression(args):
    if args.defaults:
        return "each library's own defaults (see the settings below)"
    if args.sweep:
        return f"one table per codec and filter (below), level {args.clevel}"
    return f"codec {args.codec} level {args.clevel}, filter {args.filter}"


def header(args, cfg, title, elapsed):
    model, nproc, mem, fs = machine()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = []
    w = out.append
    w(f"# {title}" + (" (--quick)" if args.quick else ""))
    w("")
    w("Written by `bash bench/compare/run.sh" + (" " + " ".join(args.argv) if args.argv else "") +
      "`; what is measured and how to read it: [README.md](README.md).")
    w("")
    w(f"- date: {now}; total run time {elapsed / 60:.1f} min")
    w(f"- machine: {model}, nproc {nproc}, {mem} RAM, {platform.system()} {platform.release()}; "
      f"arrays on {fs}; load average (1, 5, 15 min) at the start {args.load_start}, at the end "
      f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (the load before the run is other processes'; "
      f"the libraries run one after another)")
    w(f"- caterva-rs commit: {commit()}; its c-blosc2 2.15 (also b2nd 2.15's): {args.blosc215}")
    w(f"- threads: {args.threads} (where a library has a setting: see the notes)")
    w(f"- compression: {compression(args)}")
    for name in args.datasets:
        st = cfg["ds"][name]
        line = (f"- dataset `{name}` ({DS[name][1]}): shape {list(st['shape'])}"
                + (f", chunks {list(st['chunks'])}, blocks {list(st['blocks'])}" if not args.defaults else ""))
        if args.defaults and st.get("b2nd_defaults"):
            line += (f"; b2nd's chunks {list(st['b2nd_defaults'][0])}, blocks {list(st['b2nd_defaults'][1])} "
                     f"(`blosc2.compute_chunks_blocks`)")
        w(line)
    w(f"- reads: {cfg['nboxes']} random {BOX}³ boxes, {cfg['nitems']} random items, {cfg['npencils']} pencils per "
      f"axis (fixed seeds, the same for every library)")
    w(f"- medians of {cfg['reps']} repetitions (write: {cfg['write_reps']}; 1-item read and per-call overhead: the "
      f"median of {cfg['nitems']} calls; pencils: the median and the max of {cfg['npencils']} calls, no warm-up: "
      f"the first is the first such read of the process), page cache warm")
    return out


def make_cell(r, lid, head, name, key, unit, stat, nbytes, footnotes, skipped):
    """(cell text, number or None)."""
    if lid in skipped:
        return "n/a", None
    if r is None:
        return "—", None
    if r.get("na"):
        note = f"{head}, {name}: n/a: {r['na']}"
        if note not in footnotes:
            footnotes.append(note)
        return f"n/a[^{footnotes.index(note) + 1}]", None
    fail = r["fail"].get(key if key != "ratio" else "write")
    txt, num = value(r, key, unit, stat, nbytes)
    if fail:
        footnotes.append(f"{head}, {name}, {key}: {fail}")
        return f"FAIL[^{len(footnotes)}]", None
    if txt is None and r["error"]:
        footnotes.append(f"{head}, {name}: {r['error']}")
        return f"FAIL[^{len(footnotes)}]", None
    if txt is None:
        return "—", None
    return txt, num


def short_label(label, cfg, keep_bold=False):
    """A row label without its unit: 'plane [k, :, :], ms' -> 'plane [k, :, :]'."""
    lab = label.format(**cfg)
    if not keep_bold:
        lab = lab.replace("**", "")
    for unit in (", ms", ", µs", ", s", ", MB"):
        if unit in lab:
            return lab.rsplit(unit, 1)[0]
    return lab


def spread_table(w, libs, per, rows, cfg):
    """max / median of the raw times of every timed row."""
    w("Spread (max / median of the raw times; for 1-item rows, of the calls; high values: noise, or a slow "
      "first call):")
    w("")
    w("| | " + " | ".join(lib[1] for lib in libs) + " |")
    w("|---|" + "---:|" * len(libs))
    seen = set()
    for key, label, unit, stat in rows:
        if stat is None or key in seen:
            continue
        seen.add(key)
        cells = []
        for lib in libs:
            v = (per.get(lib[0]) or {}).get("ops", {}).get(key)
            m = statistics.median(v) if v else None
            cells.append(f"{max(v) / m:.2f}" if v and m else "—")
        w(f"| {short_label(label, cfg)} | " + " | ".join(cells) + " |")
    w("")


def report(args, cfg, results, skipped, elapsed):
    n_libs = [lib for lib in LIBS if lib[0] in args.only]
    title = "Cross-library benchmark: N-d arrays on disk" + (", each library's defaults" if args.defaults else "")
    out = header(args, cfg, title, elapsed)
    w = out.append
    if not args.cold:
        w("- cold run: not requested (`--cold`)")
    else:
        cold_notes = {r.get("cold") for per in results.values() for r in per.values() if r.get("cold")}
        if cold_notes:
            w(f"- cold run not available: {'; '.join(sorted(cold_notes))}")
        else:
            w("- cold run: before each repetition the page cache is dropped (`echo 3 > /proc/sys/vm/drop_caches`) "
              "and the array opened (untimed, except for the open row); 1-item: one read per repetition")
    w("")
    w("Libraries:")
    w("")
    for lib in n_libs:
        lid, head = lib[0], lib[1]
        if lid in skipped:
            w(f"- **{head}**: not measured: {skipped[lid]}")
            continue
        r = next((results[d][lid] for d in args.datasets if lid in results.get(d, {})), None)
        ver = r["version"] if r and r["version"] else "?"
        if lid in ("caterva-frame", "caterva-frame-sums", "caterva-frame-tuned", "caterva-sparse", "b2nd2", "b2nd3"):
            ver = f"c-blosc2 {ver}"
            if lid.startswith("caterva"):
                ver = f"libcaterva.so at the commit above, {ver}"
        t = args.threads
        if args.defaults:
            notes = {
                "caterva-frame": f"contiguous frame; `CATERVA_CONFIG_DEFAULTS` with `caterva_propose_config` "
                                 f"(the library's proposal: LZ4 5 + shuffle) and nthreads {t}, partitions from "
                                 f"`caterva_propose_partitions(BALANCED)` (native.c's `cat_default_settings`); "
                                 f"the default durability (FULL: a new array is synced before it is renamed "
                                 f"into place)",
                "caterva-frame-nosync": "as caterva-rs frame, created without syncing "
                                        "(`caterva_ctx_set_durability(PROCESS)`), as the other libraries write",
                "caterva-frame-sums": "as caterva-rs frame, with per-chunk checksums",
                "caterva-frame-tuned": "as caterva-rs frame, with the compression and partitions "
                                       "`caterva_tune(BALANCED)` chooses from the dataset (what the Python "
                                       "package's constructors do with data); the tuning's time is in the write",
                "caterva-sparse": "as caterva-rs frame, sparse frame (a directory)",
                "b2nd2": f"`BLOSC2_CPARAMS_DEFAULTS` with typesize and nthreads {t}; chunks and blocks from "
                         f"python-blosc2's `compute_chunks_blocks`",
                "b2nd3": f"as b2nd 2.15, the libblosc2 of the python-blosc2 wheel",
            }.get(lid)
        else:
            notes = {
                "caterva-frame": f"contiguous frame (one file); `caterva_config_t.nthreads` {t}; created "
                                 f"without syncing (`caterva_ctx_set_durability(PROCESS)`), as the other "
                                 f"libraries write (every caterva-rs column here)",
                "caterva-frame-sums": f"contiguous frame with per-chunk checksums (`caterva_ctx_set_checksums`): "
                                      f"what the frame column costs with them; `nthreads` {t}",
                "caterva-sparse": f"sparse frame (a directory, one file per chunk); `nthreads` {t}",
                "b2nd2": f"contiguous frame; cparams/dparams nthreads {t} (the dctx of an opened array "
                         f"replaced by one with nthreads {t}, as python-blosc2 does)",
                "b2nd3": f"the libblosc2 of the python-blosc2 wheel, driven from C like b2nd 2.15",
            }.get(lid)
        notes = notes or (r["notes"] if r else "")
        if r and r.get("na"):
            w(f"- **{head}**: not measured in this run: {r['na']}")
            continue
        w(f"- **{head}**: {ver}; {notes}")
    w("")
    if args.defaults:
        w("Effective settings (as each library reports them after writing):")
        w("")
        w("| library | dataset | chunks | blocks / inner | codec | level | filters | other |")
        w("|---|---|---|---|---|---|---|---|")
        for lib in n_libs:
            for name in args.datasets:
                r = results.get(name, {}).get(lib[0])
                st = (r or {}).get("settings") or {}
                if not st:
                    continue
                other = ", ".join(f"{k} {v}" for k, v in st.items()
                                  if k not in ("chunks", "blocks", "codec", "clevel", "filters"))
                w(f"| {lib[1]} | {name} | {st.get('chunks', '—')} | {st.get('blocks', '—')} | {st.get('codec', '—')} "
                  f"| {st.get('clevel', '—')} | {st.get('filters', '—')} | {other} |")
        w("")
    rows = ROWS + (COLD_ROWS if args.cold else [])
    footnotes = []
    for name in args.datasets:
        desc = DS[name][2]
        per = results.get(name, {})
        nbytes = ds_bytes(cfg, name)
        w(f"## {desc} (dataset \"{name}\", {nbytes / 1e6:.0f} MB)")
        w("")
        heads = [lib[1] for lib in n_libs]
        w("| | " + " | ".join(heads) + " |")
        w("|---|" + "---:|" * len(heads))
        nums = {}
        for key, label, unit, stat in rows:
            cells = []
            for lib in n_libs:
                txt, num = make_cell(per.get(lib[0]), lib[0], lib[1], name, key, unit, stat, nbytes, footnotes,
                                     skipped)
                cells.append(txt)
                if num is not None:
                    nums[(key, stat, lib[0])] = num
            w(f"| {label.format(**cfg)} | " + " | ".join(cells) + " |")
        w("")
        # relative table: time / caterva-rs frame's time
        if "caterva-frame" in [lib[0] for lib in n_libs] and "caterva-frame" not in skipped:
            w(f"Relative to caterva-rs frame (their time / ours; above 1: caterva-rs is faster; "
              f"file: their size / ours):")
            w("")
            w("| | " + " | ".join(heads[1:]) + " |")
            w("|---|" + "---:|" * (len(heads) - 1))
            for key, label, unit, stat in rows:
                if key == "ratio":
                    continue
                base = nums.get((key, stat, "caterva-frame"))
                cells = []
                for lib in n_libs[1:]:
                    v = nums.get((key, stat, lib[0]))
                    cells.append(f"{v / base:.2f}" if v is not None and base else "—")
                w(f"| {short_label(label, cfg, keep_bold=True)} | " + " | ".join(cells) + " |")
            w("")
        spread_table(w, [lib for lib in n_libs if lib[0] not in skipped], per, rows, cfg)
    write_footnotes(w, footnotes)
    return "\n".join(out) + "\n"


def combo_name(codec, filt):
    return f"{codec} + {filt}"


def report_sweep(args, cfg, results, skipped, elapsed):
    """One table per codec/filter combination, then ours / best b2nd per row and combination."""
    n_libs = [lib for lib in LIBS if lib[0] in args.only]
    out = header(args, cfg, "Codec and filter sweep: caterva-rs vs b2nd (C)", elapsed)
    w = out.append
    w(f"- combinations (level {args.clevel}): " + ", ".join(combo_name(c, f) for c, f in SWEEP))
    w("")
    for lib in n_libs:
        if lib[0] in skipped:
            w(f"- **{lib[1]}**: not measured: {skipped[lib[0]]}")
    rowdef = {}
    for key, label, unit, stat in ROWS:
        rowdef.setdefault(key, []).append((label, unit, stat))
    sel = [(key, label, unit, stat) for key in SWEEP_ROWS for (label, unit, stat) in rowdef[key]]
    footnotes = []
    summary = {}  # (name, key, stat) -> {combo: ratio}
    for name in args.datasets:
        nbytes = ds_bytes(cfg, name)
        w(f"## {DS[name][2]} (dataset \"{name}\", {nbytes / 1e6:.0f} MB)")
        w("")
        for codec, filt in SWEEP:
            cn = combo_name(codec, filt)
            per = results.get(cn, {}).get(name, {})
            w(f"### {cn}")
            w("")
            w("| | " + " | ".join(lib[1] for lib in n_libs) + " | ours / best b2nd |")
            w("|---|" + "---:|" * (len(n_libs) + 1))
            for key, label, unit, stat in sel:
                cells, nums = [], {}
                for lib in n_libs:
                    txt, num = make_cell(per.get(lib[0]), lib[0], lib[1], f"{name}, {cn}", key, unit, stat, nbytes,
                                         footnotes, skipped)
                    cells.append(txt)
                    nums[lib[0]] = num
                b2 = [nums.get(x) for x in ("b2nd2", "b2nd3") if nums.get(x)]
                ratio = nums.get("caterva-frame") / min(b2) if b2 and nums.get("caterva-frame") else None
                summary.setdefault((name, key, stat, label), {})[cn] = ratio
                cells.append(f"{ratio:.2f}" if ratio else "—")
                w(f"| {label.format(**cfg)} | " + " | ".join(cells) + " |")
            w("")
        w(f"### Summary, dataset \"{name}\": caterva-rs frame / the better of b2nd 2.15 and 3.x "
          f"(time or size; below 1: caterva-rs is faster or smaller)")
        w("")
        combos = [combo_name(c, f) for c, f in SWEEP]
        w("| | " + " | ".join(combos) + " |")
        w("|---|" + "---:|" * len(combos))
        for key, label, unit, stat in sel:
            rs = summary.get((name, key, stat, label), {})
            w(f"| {label.format(**cfg)} | " + " | ".join(f"{rs[c]:.2f}" if rs.get(c) else "—" for c in combos) + " |")
        w("")
        for codec, filt in SWEEP:
            cn = combo_name(codec, filt)
            per = results.get(cn, {}).get(name, {})
            if per:
                w(f"Spread, {cn}:")
                w("")
                spread_table(w, [lib for lib in n_libs if lib[0] not in skipped], per, sel, cfg)
    write_footnotes(w, footnotes)
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description="cross-library N-d array benchmark (see bench/compare/README.md)")
    p.add_argument("--threads", type=int, default=2, help="threads where a library has a setting (default 2)")
    p.add_argument("--quick", action="store_true", help="small arrays and few repetitions (a CI smoke run)")
    p.add_argument("--cold", action="store_true", help="also time reads after dropping the page cache (root)")
    p.add_argument("--only", default=None, help="comma-separated library ids: " + ",".join(lib[0] for lib in LIBS))
    p.add_argument("--datasets", default=None, help="comma-separated datasets: " + ",".join(DS) +
                   " (default all; --sweep: climate)")
    p.add_argument("--codec", default="zstd", choices=CODECS, help="blosc codec (default zstd)")
    p.add_argument("--clevel", type=int, default=5, help="compression level 0..9 (default 5)")
    p.add_argument("--filter", default="shuffle", choices=FILTERS, help="filter (default shuffle)")
    p.add_argument("--sweep", action="store_true", help="only the C blosc columns, every codec/filter combination")
    p.add_argument("--defaults", action="store_true", help="every library with its own default settings")
    p.add_argument("--reps", type=int, default=None, help="repetitions per operation (default 5, --quick 3)")
    p.add_argument("--out", default=None, help="results file (default bench/compare/results.md for a full run "
                                                "of every library, else target/compare/results-quick.md or "
                                                "target/compare/results-partial.md; --sweep: results-sweep.md, "
                                                "--defaults: results-defaults.md)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per library and dataset (default 3600)")
    args = p.parse_args()
    args.argv = sys.argv[1:]
    if args.sweep and args.defaults:
        p.error("--sweep and --defaults are separate runs")
    if not 0 <= args.clevel <= 9:
        p.error("--clevel: 0..9")
    ids = [lib[0] for lib in LIBS]
    if args.sweep:
        ids = SWEEP_LIBS
    elif args.defaults:
        ids = [x for x in ids if x != "zarr-sharded"]  # zarr has no default sharding
    else:
        # Outside --defaults every caterva-rs column writes without syncing, as the others do,
        # and the compression is the one asked for (nothing to tune).
        ids = [x for x in ids if x not in ("caterva-frame-nosync", "caterva-frame-tuned")]
    if args.only:
        args.only = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [x for x in args.only if x not in ids]
        if bad:
            p.error(f"unknown library {bad} (in this mode); known: {','.join(ids)}")
    else:
        args.only = list(ids)
    if args.datasets:
        args.datasets = [x.strip() for x in args.datasets.split(",") if x.strip()]
        bad = [x for x in args.datasets if x not in DS]
        if bad:
            p.error(f"unknown dataset {bad}; known: {','.join(DS)}")
    else:
        args.datasets = ["climate"] if args.sweep else list(DS)
    cfg = dict(QUICK if args.quick else FULL)
    if args.reps:
        cfg["reps"] = args.reps
        cfg["write_reps"] = min(cfg["write_reps"], args.reps)
    cfg["ds"] = {name: dict(DS[name][4] if args.quick else DS[name][3]) for name in args.datasets}
    default_run = (len(args.only) == len(ids) and args.datasets == list(DS) and args.codec == "zstd"
                   and args.clevel == 5 and args.filter == "shuffle")
    if args.out is None:
        mode = "sweep" if args.sweep else "defaults" if args.defaults else None
        if mode:
            if args.quick:
                args.out = os.path.join(WORK, f"results-{mode}-quick.md")
            elif len(args.only) < len(ids):
                args.out = os.path.join(WORK, f"results-{mode}-partial.md")
            else:
                args.out = os.path.join(HERE, f"results-{mode}.md")
        elif args.quick:
            args.out = os.path.join(WORK, "results-quick.md")
        elif not default_run:
            args.out = os.path.join(WORK, "results-partial.md")
        else:
            args.out = os.path.join(HERE, "results.md")
    t_start = time.time()
    args.load_start = ", ".join(f"{x:.1f}" for x in os.getloadavg())

    # 1. what is installed
    missing = {}
    for name in PIP:
        needed = name == "numpy" or any(lib[4] == name and lib[0] in args.only for lib in LIBS)
        needed = needed or (name == "python-blosc2" and args.defaults)  # compute_chunks_blocks
        if needed:
            why = ensure_installed(name)
            if why:
                missing[name] = why
                log(f"not available: {name}: {why}")
    if "numpy" in missing:
        sys.exit(f"compare: numpy is needed to generate the data: {missing['numpy']}")

    # 2. the C drivers
    built, args.blosc215 = build_drivers(missing)
    skipped = {}
    for lib in LIBS:
        lid, _, driver, _, needs = lib
        if lid not in args.only:
            continue
        if needs and needs in missing:
            skipped[lid] = missing[needs]
        elif driver != "python" and built.get(driver):
            skipped[lid] = built[driver]
    if args.defaults:
        for name in args.datasets:
            st = cfg["ds"][name]
            st["b2nd_defaults"] = blosc2_defaults(st["shape"], DS[name][1])
            if st["b2nd_defaults"] is None:
                for lid in ("b2nd2", "b2nd3"):
                    skipped.setdefault(lid, "blosc2.compute_chunks_blocks failed (python-blosc2 not installed?)")
    for lid, why in skipped.items():
        log(f"skipping {lid}: {why}")

    # 3. data, 4. runs
    results = {}
    for name in args.datasets:
        st = cfg["ds"][name]
        data = generate(name, st["shape"])
        positions = positions_file(st["shape"], cfg["nboxes"], cfg["nitems"], cfg["npencils"])
        runnable = [lib for lib in LIBS if lib[0] in args.only and lib[0] not in skipped]
        if args.sweep:
            for codec, filt in SWEEP:
                cn = combo_name(codec, filt)
                per = results.setdefault(cn, {}).setdefault(name, {})
                for lib in runnable:
                    per[lib[0]] = run_one(lib, DS[name], args, cfg, data, positions, codec, args.clevel, filt,
                                          f" ({cn})")
        else:
            results[name] = {}
            for lib in runnable:
                results[name][lib[0]] = run_one(lib, DS[name], args, cfg, data, positions, args.codec, args.clevel,
                                                args.filter)

    elapsed = time.time() - t_start
    text = (report_sweep if args.sweep else report)(args, cfg, results, skipped, elapsed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write(text)
    os.replace(args.out + ".tmp", args.out)

    def plain(o):
        if isinstance(o, dict):
            return {k: plain(v) for k, v in o.items()}
        return list(o) if isinstance(o, tuple) else o

    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"cfg": plain(cfg), "threads": args.threads, "codec": args.codec, "clevel": args.clevel,
                   "filter": args.filter, "mode": "sweep" if args.sweep else "defaults" if args.defaults else "same",
                   "datasets": args.datasets, "results": results, "skipped": skipped}, f)
    sys.stdout.write(text)
    log(f"results written to {args.out} ({(time.time() - t_start) / 60:.1f} min)")
    runs = [r for per in results.values() for r in per.values()]
    if args.sweep:
        runs = [r for byds in results.values() for per in byds.values() for r in per.values()]
    fails = sum(len(r["fail"]) + bool(r["error"]) for r in runs)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
