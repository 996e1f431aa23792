#!/usr/bin/env bash
# The BLZ import of carrays with small chunks (issue 26): bcolz-zipline writes
# N float64 prices (a random walk in cents) with chunk lengths 4 and 64;
# bcolz reads each whole into NumPy, caterva imports it (default partitions,
# and the source's chunk length as chunks and blocks, as before issue 26)
# and reads it whole. Medians of REPS runs (default 5).
#   bash bench/blz/small_chunks.sh [NTHREADS]
# Needs the venv target/interop/bcolz (.ci/setup). Data in target/bench/blz-small/.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${1:-2}
dir=target/bench/blz-small
py=target/interop/bcolz/bin/python
cargo build --release --example blz_small_chunks -p caterva
mkdir -p "$dir"
for spec in "4 500000" "64 4000000"; do
    set -- $spec
    chunklen=$1 n=$2
    c="$dir/prices_$chunklen.bcolz"
    [ -d "$c" ] || "$py" - "$c" "$n" "$chunklen" <<'PY'
import sys
import bcolz, numpy as np
path, n, chunklen = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
walk = np.round(100 + np.cumsum(np.random.default_rng(42).integers(-3, 4, n)) * 0.01, 2)
bcolz.carray(walk, rootdir=path, mode="w", chunklen=chunklen).flush()
PY
    echo "== chunklen $chunklen, $n float64 ($((n * 8)) bytes), $(du -sk "$c" | cut -f1) KiB on disk"
    "$py" - "$c" "$threads" "${REPS:-5}" <<'PY'
import sys, time
import bcolz, numpy as np
bcolz.set_nthreads(int(sys.argv[2]))
c = bcolz.open(sys.argv[1], mode="r")
runs = []
for _ in range(int(sys.argv[3])):
    t = time.perf_counter()
    c[:]
    runs.append(time.perf_counter() - t)
print(f"bcolz ratio {c.nbytes / c.cbytes:.2f} read {sorted(runs)[len(runs) // 2]:.4f}")
PY
    LD_LIBRARY_PATH="$PWD/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
        target/release/examples/blz_small_chunks "$c" "$dir" "$threads"
done
