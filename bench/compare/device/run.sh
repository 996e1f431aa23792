#!/usr/bin/env bash
# The device run of issue 27: thread scaling of caterva-rs vs b2nd 2.15 and
# 3.x on the climate dataset (same settings, LZ4 5 + shuffle; ZSTD 5 at 16
# threads) and each library's defaults at 16 threads. Output: JSON lines
# (a {"run": ...} line before each driver's output) in $OUT/results.jsonl.
# Usage: bash target/device/run.sh [T Y X]   (default 240 721 1440; built by
# bench/compare/device/build.sh, results in $OUT/results.jsonl)
set -u
D=$(cd "$(dirname "$0")" && pwd)
T=${1:-240}; Y=${2:-721}; X=${3:-1440}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
R=$OUT/results.jsonl; : > "$R"
W=${WORK:-/tmp/c27}; mkdir -p "$W"
DATA=$W/climate.bin
POS=$(ls "$D"/positions-${T}x${Y}x${X}-*.txt)
{ nproc; lscpu | grep -E "Model name|Thread|Socket"; df -h "$W" | tail -1; } > "$OUT/machine.txt" 2>&1
t0=$(date +%s%N)
"$D/gen_climate" "$T" "$Y" "$X" "$DATA" || exit 1
echo "{\"gen_ms\": $(( ($(date +%s%N) - t0) / 1000000 ))}" >> "$R"
same="--chunks 24,180,360 --blocks 4,45,90"
[ "$T" -lt 240 ] && same="--chunks 12,36,72 --blocks 4,12,24"
b2def="--chunks 1,$Y,$X --blocks 1,45,$X"
[ "$T" -lt 240 ] && b2def="--chunks $T,$Y,$X --blocks 6,$Y,$X"
run() { # label driver lib threads extra...
    local label=$1 drv=$2 lib=$3 th=$4; shift 4
    echo "{\"run\": \"$label\", \"lib\": \"$lib\", \"threads\": $th}" >> "$R"
    timeout 300 "$D/$drv" --lib "$lib" --data "$DATA" --dtype f4 --shape "$T,$Y,$X" --threads "$th" \
        --reps 3 --write-reps 2 --positions "$POS" --box 16 --path "$W/arr-$lib" "$@" >> "$R" 2>> "$OUT/stderr.txt"
    echo "{\"rc\": $?}" >> "$R"
    rm -rf "$W/arr-$lib"
}
for th in 16 8 4 2 1; do
    for lib in caterva-frame b2nd; do run same-lz4 native-caterva $lib $th $same --codec lz4 --clevel 5 --filter shuffle; done
    run same-lz4 native-b2nd3 b2nd $th $same --codec lz4 --clevel 5 --filter shuffle
done
for lib in caterva-frame b2nd; do run same-zstd native-caterva $lib 16 $same --codec zstd --clevel 5 --filter shuffle; done
run same-zstd native-b2nd3 b2nd 16 $same --codec zstd --clevel 5 --filter shuffle
for lib in caterva-frame caterva-frame-nosync b2nd; do run defaults native-caterva $lib 16 $b2def --defaults; done
run defaults native-b2nd3 b2nd 16 $b2def --defaults
for f in floor2 floor3; do "$D/$f" "$DATA" >> "$R"; done
echo "{\"total_ms\": $(( ($(date +%s%N) - t0) / 1000000 ))}" >> "$R"
