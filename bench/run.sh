#!/usr/bin/env bash
# Build caterva-rs (release) and the C benchmark bench/bench.c against it, then
# run the benchmark, passing the arguments through.
#   bash bench/run.sh            # the full run (a few minutes on 2 cores)
#   bash bench/run.sh --quick    # a smaller array, a smoke run of seconds
#   bash bench/run.sh --reps N   # N repetitions per operation (default 5)
#   bash bench/run.sh --slow-reps M  # for from_buffer and append (default min(3, N))
# The report (stdout: date, CPU, cores, c-blosc2 version, git commit, then the
# tables) is also saved in target/bench/results.md, or results-quick.md for a
# --quick run, replaced only when the run succeeds. Progress goes to stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
cc -O2 -std=c99 -Wall -Wextra -Iinclude -Itarget/blosc2/include bench/bench.c \
    -Ltarget/release -Wl,-rpath,"$PWD/target/release" -lcaterva -lblosc2 -lm \
    -o target/release/caterva-bench
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    commit="$commit (with uncommitted changes)"
fi
results=target/bench/results.md
for arg in "$@"; do
    if [ "$arg" = --quick ]; then results=target/bench/results-quick.md; fi
done
mkdir -p target/bench
tmp=$results.tmp
if ! BENCH_GIT_COMMIT="$commit" target/release/caterva-bench "$@" | tee "$tmp"; then
    rm -f "$tmp"
    exit 1
fi
mv "$tmp" "$results"
echo "bench: results saved in $results" >&2
