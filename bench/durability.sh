#!/usr/bin/env bash
# What a one-row write to a persisted array costs at each durability level
# (examples/durability_bench.rs), and which step makes each sync:
#   bash bench/durability.sh [DIR] [REPS]
# DIR (default target/bench/durability) should be on the disk you care
# about (/tmp may be a tmpfs, where syncs are free). Prints the timing
# table, then, for each case, the syncs of TRACED (default 10) writes by
# the file they sync, with the time each took (with strace, when it is
# installed and allowed to trace). BIN=path runs another build of the
# example (one made from an earlier commit, say).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-target/bench/durability}
reps=${2:-100}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
if [ -z "${BIN:-}" ]; then
    cargo build --release --example durability_bench
fi
bin=${BIN:-target/release/examples/durability_bench}
# libblosc2 lies beside libcaterva in target/release (cargo run would say so).
export LD_LIBRARY_PATH=$PWD/target/release${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$bin" "$dir" "$reps"
if ! command -v strace >/dev/null || ! strace -o /dev/null true 2>/dev/null; then
    echo "(no working strace: no breakdown of the syncs)" >&2
    exit 0
fi
traced=${TRACED:-10}
echo
echo "Syncs per write ($traced writes traced), by what they sync: count, and mean ms each (strace -T):"
for storage in frame sparse; do
    for n in 1 1+xxh3 10; do
        for level in full normal process; do
            log=$dir/strace-$storage-$n-$level.txt
            strace -f -y -T -o "$log" -e trace=write,fsync,fdatasync,sync_file_range,syncfs \
                "$bin" "$dir" "$traced" "$storage/$n/$level" >/dev/null
            # The syncs between the START and END markers, by the file named in <...>.
            awk -v name="$storage/$n/$level" -v reps="$traced" '
                /write\(1.*"START/ { on = 1; next }
                /write\(1.*"END/ { on = 0 }
                on && /(fsync|fdatasync|sync_file_range|syncfs)\(/ {
                    match($0, /<[^>]*>/); f = substr($0, RSTART + 1, RLENGTH - 2)
                    if (f ~ /caterva-journal-tmp$/) k = "journal data"
                    else if (f ~ /caterva-journal$/) k = "journal record of a later operation"
                    else if (f ~ /chunks\.b2frame$/) k = "sparse index"
                    else if (f ~ /\.chunk$/) k = "chunk files"
                    else if (f ~ /\.b2nd$/ && name ~ /^sparse/) k = "array directory"
                    else if (f ~ /\.b2nd$/) k = "frame file"
                    else k = "directory of the journal (its name)"
                    match($0, /<[0-9.]+>$/); t = substr($0, RSTART + 1, RLENGTH - 2) * 1000
                    count[k]++; ms[k] += t; total++; all += t
                }
                END {
                    printf "%s: %.1f syncs a write, %.2f ms", name, total / reps, all / reps
                    for (k in count) printf "; %s %.1f (%.2f ms)", k, count[k] / reps, ms[k] / count[k]
                    printf "\n"
                }' "$log"
        done
    done
done
