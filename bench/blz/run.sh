#!/usr/bin/env bash
# The BLZ import benchmark (issue 15): import of a ~1 GB bcolz carray against
# decompressing its chunks with python-blosc plus compressing the values into
# the same target (a frame file, the import's partitions, zstd 5 + shuffle).
#   bash bench/blz/run.sh [NITEMS] [NTHREADS]   (default 134217728 float64 = 1 GiB, 2 threads)
# Needs the venv target/interop/bcolz (.ci/setup). Data in target/bench/blz/.
# Reports the seconds of each part, the ratio baseline / import (the issue
# asks for >= 0.7) and the import's peak memory (/usr/bin/time -v of the
# `caterva import` command, same work).
set -euo pipefail
cd "$(dirname "$0")/../.."
n=${1:-134217728}
threads=${2:-2}
dir=target/bench/blz
py=target/interop/bcolz/bin/python
cargo build --release --example blz_bench -p caterva
cargo build --release -p caterva-cli
if [ ! -f "$dir/prices.raw" ] || [ "$(stat -c %s "$dir/prices.raw")" != $((n * 8)) ]; then
    "$py" bench/blz/make.py "$dir" "$n"
fi
# Warm the page cache for both sides.
cat "$dir"/prices.bcolz/data/* "$dir/prices.raw" > /dev/null
read -r dec _ < <("$py" bench/blz/decompress.py "$dir/prices.bcolz" "$threads")
out=$(LD_LIBRARY_PATH="$PWD/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" target/release/examples/blz_bench "$dir/prices.bcolz" "$dir/prices.raw" "$dir" "$threads")
echo "$out"
imp=$(echo "$out" | awk '/^import/ {print $2}')
comp=$(echo "$out" | awk '/^compress/ {print $2}')
rm -rf "$dir/cli.b2frame"
/usr/bin/time -v target/release/caterva import -q -j "$threads" "$dir/prices.bcolz" "$dir/cli.b2frame" 2> "$dir/time.txt"
rss=$(awk -F': ' '/Maximum resident/ {print $2}' "$dir/time.txt")
wall=$(awk -F': ' '/Elapsed \(wall/ {print $2}' "$dir/time.txt")
rm -rf "$dir/cli.b2frame" "$dir/import.b2frame" "$dir/compress.b2frame"
python3 - "$dec" "$comp" "$imp" "$rss" "$wall" "$n" "$threads" <<'PY'
import sys
dec, comp, imp, rss, wall, n, threads = sys.argv[1:]
dec, comp, imp = float(dec), float(comp), float(imp)
base = dec + comp
print(f"items {n} ({int(n) * 8 / 2**30:.2f} GiB), {threads} threads")
print(f"python-blosc decompress {dec:.2f} s + caterva compress {comp:.2f} s = baseline {base:.2f} s")
print(f"caterva import {imp:.2f} s: speed ratio baseline/import = {base / imp:.2f} (issue: >= 0.70)")
print(f"caterva import CLI: wall {wall}, peak RSS {int(rss) / 1024:.1f} MiB")
PY
