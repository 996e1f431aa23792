#!/usr/bin/env bash
# Build caterva-rs (release) and the growth benchmark bench/growth.c against
# it (b2nd from the libblosc2 2.15 it links), then run it, passing the
# arguments through.
#   bash bench/growth.sh            # K up to 1M chunks (minutes on 2 cores)
#   bash bench/growth.sh --quick    # K up to 10k chunks, seconds
#   bash bench/growth.sh --reps N   # N repetitions per cell
# The report (a markdown table, stdout) is also saved in
# target/bench/growth.md (growth-quick.md for --quick) when the run succeeds.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
cc -O2 -std=c99 -Wall -Wextra -Iinclude -Itarget/blosc2/include bench/growth.c \
    -Ltarget/release -Wl,-rpath,"$PWD/target/release" -lcaterva -lblosc2 \
    -o target/release/caterva-growth
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git diff --quiet HEAD -- 2>/dev/null; then
    commit="$commit (with uncommitted changes)"
fi
results=target/bench/growth.md
for arg in "$@"; do
    if [ "$arg" = --quick ]; then results=target/bench/growth-quick.md; fi
done
mkdir -p target/bench
tmp=$results.tmp
if ! BENCH_GIT_COMMIT="$commit" target/release/caterva-growth "$@" | tee "$tmp"; then
    rm -f "$tmp"
    exit 1
fi
mv "$tmp" "$results"
echo "growth: results saved in $results" >&2
