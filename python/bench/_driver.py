"""What the benchmarks of this folder share: each library runs in a child
process of the benchmark's own script, under the Python of the library's
venv (this package's and python-blosc2's need different NumPys), and hands
its figures back as one JSON object on its last line of output.

The scripts run as `python python/bench/X.py`, so this folder is on
sys.path and `import _driver` finds this file, in the parent and in the
children alike (plain stdlib here: every venv has it).
"""

import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]


def venv_python(name):
    """The Python of target/interop/NAME, or None where that venv is not made."""
    p = ROOT / "target" / "interop" / name / "bin" / "python"
    return str(p) if p.exists() else None


def scratch():
    """A temporary directory under target/ for the children's arrays,
    removed with all it holds at the end of the `with`."""
    return tempfile.TemporaryDirectory(dir=ROOT / "target")


def options(a, *names):
    """The options that hand the parsed arguments NAMES of `a` on to a child
    (a shape, parsed into a tuple, written back as `1024,1024`)."""
    out = []
    for name in names:
        v = getattr(a, name)
        out += [f"--{name}", ",".join(map(str, v)) if isinstance(v, tuple) else str(v)]
    return out


def child(py, script, args):
    """Run `script` with `args` under the interpreter `py`; the JSON object
    of its last line. A failed child ends the benchmark with its output."""
    cmd = [py, script, *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def best_of_rounds(script, runs, rounds, args):
    """Run `script --lib LIB --dir DIR ARGS` for each (LIB, python) of
    `runs`, libraries alternating, `rounds` times over, in one scratch
    directory (a child may keep what an earlier round wrote there). A
    library whose venv is missing (python None) is skipped with a word on
    stderr. Returns {LIB: figures}, each figure the least of the rounds: on
    a shared machine the best round is the one others disturbed least.
    A library reports the same keys every round; "version" is kept as is."""
    results = {}
    with scratch() as d:
        for _ in range(rounds):
            for lib, py in runs:
                if py is None:
                    print(f"{lib}: no venv, skipped", file=sys.stderr)
                    continue
                new = child(py, script, ["--lib", lib, "--dir", d, *args])
                old = results.setdefault(lib, new)
                for k, v in new.items():
                    if k != "version":
                        old[k] = min(old[k], v)
    return results
