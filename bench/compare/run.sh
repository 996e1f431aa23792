#!/usr/bin/env bash
# The cross-library benchmark (bench/compare/README.md): builds caterva-rs
# (cargo build --release), makes the virtual environment target/compare/venv
# (reused when present), and runs bench/compare/run.py in it, which installs
# the Python libraries it lacks, builds the C drivers, generates the datasets
# once (target/compare/data) and writes the results.
#   bash bench/compare/run.sh                  # the full run: bench/compare/results.md
#   bash bench/compare/run.sh --quick          # the full CI's smoke run: target/compare/results-quick.md
#   bash bench/compare/run.sh --threads 16 --cold --only caterva-frame,zarr
#   bash bench/compare/run.sh --sweep          # codecs x filters, C columns, climate: bench/compare/results-sweep.md
#   bash bench/compare/run.sh --defaults       # every library untuned: bench/compare/results-defaults.md
# Options: --threads N (default 2), --quick, --cold, --only ID,ID,
# --datasets int,float,climate, --codec lz4|blosclz|zstd|lz4hc, --clevel N,
# --filter shuffle|bitshuffle|none, --sweep, --defaults, --reps N,
# --out FILE, --timeout S (per library and dataset). Exit status 1 when an
# operation failed its check or a library crashed.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release
venv=target/compare/venv
if [ ! -x "$venv/bin/python" ]; then
    python=$(command -v python3 || command -v python)
    echo "compare: creating $venv" >&2
    mkdir -p target/compare
    "$python" -m venv "$venv"
fi
exec "$venv/bin/python" bench/compare/run.py "$@"
