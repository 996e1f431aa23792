#!/usr/bin/env bash
# Build what bench/compare/device/run.sh runs into target/device, a folder
# that can be copied to a machine without a toolchain or registry (every
# binary finds its libraries beside it, rpath $ORIGIN): libcaterva and the
# c-blosc2 2.15 it links, python-blosc2's c-blosc2 3.x (from the venv of
# bench/compare/run.sh, which must have run once), the C driver native.c
# for both, the climate generator, the codec floor, the positions file.
#   bash bench/compare/device/build.sh && scp -r target/device host: && ssh host bash device/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --release
D=target/device
mkdir -p "$D"
S=$(target/compare/venv/bin/python -c "import blosc2, os; print(os.path.dirname(blosc2.__file__))")
cp target/release/libcaterva.so "$D/libcaterva.so.0"
cp -L target/release/libblosc2.so.4 "$D/"
cp -L "$S/lib/libblosc2.so.9" "$D/"
strip "$D"/libcaterva.so.0 "$D"/libblosc2.so.4 "$D"/libblosc2.so.9
src=bench/compare
cc -O2 -std=c99 -DWITH_CATERVA -Iinclude -Itarget/blosc2/include $src/native.c -L$D -Wl,-rpath,'$ORIGIN' \
    -l:libcaterva.so.0 -l:libblosc2.so.4 -lm -o $D/native-caterva
cc -O2 -std=c99 -I"$S/include" $src/native.c -L$D -Wl,-rpath,'$ORIGIN' -l:libblosc2.so.9 -lm -o $D/native-b2nd3
cc -O2 -o $D/gen_climate $src/device/gen_climate.c -lm
cc -O2 -std=c99 -Itarget/blosc2/include $src/device/floor.c -L$D -Wl,-rpath,'$ORIGIN' -l:libblosc2.so.4 -o $D/floor2
cc -O2 -std=c99 -I"$S/include" $src/device/floor.c -L$D -Wl,-rpath,'$ORIGIN' -l:libblosc2.so.9 -o $D/floor3
cp target/compare/data/positions-240x721x1440-*.txt "$D/" 2>/dev/null || echo "no positions file: run bench/compare/run.sh --datasets climate once" >&2
cp $src/device/run.sh "$D/run.sh"
du -sh "$D"
