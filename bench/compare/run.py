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
}
IMPORTS = {"numpy": ["numpy"], "python-blosc2": ["blosc2"], "zarr": ["zarr", "numcodecs"],
           "h5py": ["h5py", "hdf5plugin"], "tiledb": ["tiledb"]}

# The columns: id, heading, driver kind, what it needs installed.
LIBS = [
    ("caterva-frame", "caterva-rs frame (C)", "native-caterva", "caterva-frame", None),
    ("caterva-frame-sums", "caterva-rs frame, checksums (C)", "native-caterva", "caterva-frame-sums", None),
    ("caterva-sparse", "caterva-rs sparse dir (C)", "native-caterva", "caterva-sparse", None),
    ("b2nd2", "b2nd c-blosc2 2.15 (C)", "native-caterva", "b2nd", None),
    ("b2nd3", "b2nd c-blosc2 3.x (C)", "native-b2nd3", "b2nd", "python-blosc2"),
    ("python-blosc2", "python-blosc2 (Py)", "python", "python-blosc2", "python-blosc2"),
    ("zarr", "zarr v3 (Py)", "python", "zarr", "zarr"),
    ("zarr-sharded", "zarr v3 sharded (Py)", "python", "zarr-sharded", "zarr"),
    ("h5py", "h5py + Blosc2 (Py)", "python", "h5py", "h5py"),
    ("tiledb", "TileDB (Py)", "python", "tiledb", "tiledb"),
]

FULL = dict(shape=(300, 745, 400), chunks=(50, 150, 100), blocks=(13, 21, 30), reps=5, write_reps=3,
            nboxes=300, nitems=200)
QUICK = dict(shape=(60, 149, 80), chunks=(30, 75, 40), blocks=(13, 21, 30), reps=3, write_reps=1,
             nboxes=300, nitems=50)
BOX = 16
DATASETS = [("int", "i8", "int64 0..n"), ("float", "f8", "float64 smooth field + quantized noise")]
DATA_VERSION = "v1"  # change when the generators below change: the cache is keyed by it

ROWS = [  # (op key, row label, unit: "s", "ms", "us", "MB", "x")
    ("write", "write, s", "s"),
    ("file_bytes", "file, MB", "MB"),
    ("ratio", "compression ratio", "x"),
    ("open", "open, ms", "ms"),
    ("full", "full read, ms", "ms"),
    ("plane0", "plane [k, :, :], ms", "ms"),
    ("plane1", "plane [:, k, :], ms", "ms"),
    ("plane2", "plane [:, :, k], ms", "ms"),
    ("boxes", "{nboxes} boxes 16³ (total), ms", "ms"),
    ("item", "1-item read, µs", "us"),
    ("overhead", "per-call overhead, µs", "us"),
]
COLD_ROWS = [
    ("open_cold", "cold: open, ms", "ms"),
    ("full_cold", "cold: full read, ms", "ms"),
    ("plane0_cold", "cold: plane [k, :, :], ms", "ms"),
    ("plane1_cold", "cold: plane [:, k, :], ms", "ms"),
    ("plane2_cold", "cold: plane [:, :, k], ms", "ms"),
    ("boxes_cold", "cold: {nboxes} boxes 16³, ms", "ms"),
    ("item_cold", "cold: 1-item read, µs", "us"),
]


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


def generate(name, shape):
    """The dataset, generated once and cached: int64 0..n, or the float64 field."""
    import numpy as np

    path = dataset_path(name, shape)
    if os.path.exists(path):
        return path
    log(f"generating {path}")
    os.makedirs(DATA, exist_ok=True)
    if name == "int":
        a = np.arange(np.prod(shape), dtype="<i8").reshape(shape)
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
    tmp = path + ".tmp"
    a.tofile(tmp)
    os.replace(tmp, path)
    return path


def positions_file(shape, nboxes, nitems):
    """Random box corners and item positions (fixed seed), shared by all libraries."""
    import numpy as np

    path = os.path.join(DATA, f"positions-{'x'.join(map(str, shape))}-b{BOX}x{nboxes}-i{nitems}-{DATA_VERSION}.txt")
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
    os.replace(path + ".tmp", path)
    return path


# ---------------------------------------------------------------- running


def run_one(lib, ds, args, cfg, data, positions):
    """Run one library on one dataset in its own process; return its parsed output."""
    lid, _, driver, libarg, _ = lib
    name, dtype, _ = ds
    os.makedirs(ARRAYS, exist_ok=True)
    path = os.path.join(ARRAYS, f"{lid}-{name}" + (".h5" if lid == "h5py" else ""))
    common = ["--lib", libarg, "--data", data, "--dtype", dtype, "--shape", ",".join(map(str, cfg["shape"])),
              "--chunks", ",".join(map(str, cfg["chunks"])), "--blocks", ",".join(map(str, cfg["blocks"])),
              "--threads", str(args.threads), "--reps", str(cfg["reps"]), "--write-reps", str(cfg["write_reps"]),
              "--positions", positions, "--box", str(BOX), "--path", path]
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
    log(f"{lid} on {name}")
    t0 = time.time()
    res = {"ops": {}, "fail": {}, "version": None, "notes": None, "cold": None, "error": None}
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
            for k in ("version", "notes", "cold"):
                if k in o:
                    res[k] = o[k]
    if rc != 0:
        last = [x for x in stderr.strip().splitlines() if x.strip()]
        res["error"] = f"exit status {rc}: {last[-1][:300] if last else 'no message'}"
    shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) else None
    if os.path.exists(path):
        os.remove(path)
    log(f"{lid} on {name}: {time.time() - t0:.0f} s" + (f" ({res['error']})" if res["error"] else ""))
    return res


# ---------------------------------------------------------------- report


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


def value(res, key, unit, nbytes):
    """(text, number) for one cell."""
    if key == "ratio":
        fb = res["ops"].get("file_bytes")
        return (f"{nbytes / fb:.1f}", nbytes / fb) if fb else (None, None)
    v = res["ops"].get(key)
    if v is None:
        return None, None
    if unit == "MB":
        return f"{v / 1e6:.1f}", v / 1e6
    m = statistics.median(v)
    if unit == "s":
        m /= 1e3
        return (f"{m:.2f}" if m < 10 else f"{m:.1f}"), m
    if unit == "us":
        m *= 1e3
    return (f"{m:.2f}" if m < 10 else f"{m:.1f}" if m < 1000 else f"{m:.0f}"), m


def report(args, cfg, results, skipped, elapsed):
    model, nproc, mem, fs = machine()
    n_libs = [lib for lib in LIBS if lib[0] in args.only]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    out = []
    w = out.append
    w("# Cross-library benchmark: N-d arrays on disk" + (" (--quick)" if args.quick else ""))
    w("")
    w("Written by `bash bench/compare/run.sh" + (" " + " ".join(args.argv) if args.argv else "") +
      "`; what is measured and how to read it: [README.md](README.md).")
    w("")
    w(f"- date: {now}; total run time {elapsed / 60:.1f} min")
    w(f"- machine: {model}, nproc {nproc}, {mem} RAM, {platform.system()} {platform.release()}; "
      f"arrays on {fs}; load average (1, 5, 15 min) at the start {args.load_start}, at the end "
      f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (the load before the run is other processes')")
    w(f"- caterva-rs commit: {commit()}; its c-blosc2 2.15 (also b2nd 2.15's): {args.blosc215}")
    w(f"- threads: {args.threads} (where a library has a setting: see the notes)")
    w(f"- workload: shape {list(cfg['shape'])}, chunks {list(cfg['chunks'])}, blocks {list(cfg['blocks'])}, 8-byte "
      f"items, ZSTD level 5 + byte shuffle; {cfg['nboxes']} random {BOX}³ boxes and {cfg['nitems']} random items "
      f"(fixed seed, the same for every library)")
    w(f"- medians of {cfg['reps']} repetitions (write: {cfg['write_reps']}; 1-item read and per-call overhead: the "
      f"median of {cfg['nitems']} calls), page cache warm")
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
    # versions and notes
    w("Libraries:")
    w("")
    for lib in n_libs:
        lid, head = lib[0], lib[1]
        if lid in skipped:
            w(f"- **{head}**: not measured: {skipped[lid]}")
            continue
        r = next((results[d[0]][lid] for d in DATASETS if lid in results.get(d[0], {})), None)
        ver = r["version"] if r and r["version"] else "?"
        if lid in ("caterva-frame", "caterva-frame-sums", "caterva-sparse", "b2nd2", "b2nd3"):
            ver = f"c-blosc2 {ver}"
            if lid.startswith("caterva"):
                ver = f"libcaterva.so at the commit above, {ver}"
        notes = {
            "caterva-frame": f"contiguous frame (one file); `caterva_config_t.nthreads` {args.threads}",
            "caterva-frame-sums": f"contiguous frame with per-chunk checksums (`caterva_ctx_set_checksums`): "
                                  f"what the frame column costs with them; `nthreads` {args.threads}",
            "caterva-sparse": f"sparse frame (a directory, one file per chunk); `nthreads` {args.threads}",
            "b2nd2": f"contiguous frame; cparams/dparams nthreads {args.threads} (the dctx of an opened array "
                     f"replaced by one with nthreads {args.threads}, as python-blosc2 does)",
            "b2nd3": f"the libblosc2 of the python-blosc2 wheel, driven from C like b2nd 2.15",
        }.get(lid) or (r["notes"] if r else "")
        w(f"- **{head}**: {ver}; {notes}")
    w("")
    rows = ROWS + (COLD_ROWS if args.cold else [])
    footnotes = []
    for ds in DATASETS:
        name, _, desc = ds
        per = results.get(name, {})
        nbytes = 8 * cfg["shape"][0] * cfg["shape"][1] * cfg["shape"][2]
        w(f"## {desc} (dataset \"{name}\", {nbytes / 1e6:.0f} MB)")
        w("")
        heads = [lib[1] for lib in n_libs]
        w("| | " + " | ".join(heads) + " |")
        w("|---|" + "---:|" * len(heads))
        nums = {}
        for key, label, unit in rows:
            cells = []
            for lib in n_libs:
                lid = lib[0]
                if lid in skipped:
                    cells.append("n/a")
                    continue
                r = per.get(lid)
                fail = r["fail"].get(key if key != "ratio" else "write") if r else None
                txt, num = value(r, key, unit, nbytes) if r else (None, None)
                if fail:
                    footnotes.append(f"{lib[1]}, {name}, {key}: {fail}")
                    cells.append(f"FAIL[^{len(footnotes)}]")
                elif txt is None and r and r["error"]:
                    footnotes.append(f"{lib[1]}, {name}: {r['error']}")
                    cells.append(f"FAIL[^{len(footnotes)}]")
                elif txt is None:
                    cells.append("—")
                else:
                    cells.append(txt)
                    nums[(key, lid)] = num
            w(f"| {label.format(**cfg)} | " + " | ".join(cells) + " |")
        w("")
        # relative table: time / caterva-rs frame's time
        if "caterva-frame" in [lib[0] for lib in n_libs] and "caterva-frame" not in skipped:
            w(f"Relative to caterva-rs frame (their time / ours; above 1: caterva-rs is faster; "
              f"file: their size / ours):")
            w("")
            w("| | " + " | ".join(heads[1:]) + " |")
            w("|---|" + "---:|" * (len(heads) - 1))
            for key, label, unit in rows:
                if key == "ratio":
                    continue
                base = nums.get((key, "caterva-frame"))
                cells = []
                for lib in n_libs[1:]:
                    v = nums.get((key, lib[0]))
                    cells.append(f"{v / base:.2f}" if v is not None and base else "—")
                w(f"| {label.format(**cfg).rsplit(',', 1)[0]} | " + " | ".join(cells) + " |")
            w("")
    if footnotes:
        for i, f in enumerate(footnotes, 1):
            w(f"[^{i}]: {f}")
        w("")
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description="cross-library N-d array benchmark (see bench/compare/README.md)")
    p.add_argument("--threads", type=int, default=2, help="threads where a library has a setting (default 2)")
    p.add_argument("--quick", action="store_true", help="a small array and few repetitions (a CI smoke run)")
    p.add_argument("--cold", action="store_true", help="also time reads after dropping the page cache (root)")
    p.add_argument("--only", default=None, help="comma-separated library ids: " + ",".join(lib[0] for lib in LIBS))
    p.add_argument("--reps", type=int, default=None, help="repetitions per operation (default 5, --quick 3)")
    p.add_argument("--out", default=None, help="results file (default bench/compare/results.md for a full run "
                                                "of every library, else target/compare/results-quick.md or "
                                                "target/compare/results-partial.md)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per library and dataset (default 3600)")
    args = p.parse_args()
    args.argv = sys.argv[1:]
    ids = [lib[0] for lib in LIBS]
    if args.only:
        args.only = [x.strip() for x in args.only.split(",") if x.strip()]
        bad = [x for x in args.only if x not in ids]
        if bad:
            p.error(f"unknown library {bad}; known: {','.join(ids)}")
    else:
        args.only = ids
    cfg = dict(QUICK if args.quick else FULL)
    if args.reps:
        cfg["reps"] = args.reps
        cfg["write_reps"] = min(cfg["write_reps"], args.reps)
    if args.out is None:
        if args.quick:
            args.out = os.path.join(WORK, "results-quick.md")
        elif len(args.only) < len(ids):
            args.out = os.path.join(WORK, "results-partial.md")
        else:
            args.out = os.path.join(HERE, "results.md")
    t_start = time.time()
    args.load_start = ", ".join(f"{x:.1f}" for x in os.getloadavg())

    # 1. what is installed
    missing = {}
    for name in PIP:
        if name == "numpy" or any(lib[4] == name and lib[0] in args.only for lib in LIBS):
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
    for lid, why in skipped.items():
        log(f"skipping {lid}: {why}")

    # 3. data, 4. runs
    positions = positions_file(cfg["shape"], cfg["nboxes"], cfg["nitems"])
    results = {}
    for ds in DATASETS:
        data = generate(ds[0], cfg["shape"])
        results[ds[0]] = {}
        for lib in LIBS:
            if lib[0] in args.only and lib[0] not in skipped:
                results[ds[0]][lib[0]] = run_one(lib, ds, args, cfg, data, positions)

    text = report(args, cfg, results, skipped, time.time() - t_start)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        f.write(text)
    os.replace(args.out + ".tmp", args.out)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"cfg": {k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
                   "threads": args.threads, "results": results, "skipped": skipped}, f)
    sys.stdout.write(text)
    log(f"results written to {args.out} ({(time.time() - t_start) / 60:.1f} min)")
    fails = sum(len(r["fail"]) + bool(r["error"]) for per in results.values() for r in per.values())
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
