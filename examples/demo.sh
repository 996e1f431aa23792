#!/usr/bin/env bash
# Build examples/demo.c against the release libcaterva.so and run it (with
# this script's arguments: demo [URLPATH [keep]]).
# Expects `cargo build --release` to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
lib="$PWD/target/release"
out="$PWD/target/demo"
mkdir -p "$out"
cc -std=c99 -Wall -Wextra -Werror -O2 examples/demo.c -o "$out/demo" \
    -Iinclude -Itarget/blosc2/include -L"$lib" -Wl,-rpath,"$lib" -lcaterva -lblosc2
cd "$out" && ./demo "$@"
