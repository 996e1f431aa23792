#!/usr/bin/env bash
# Arrays on S3, end to end, against a local S3 server (moto's, from
# .ci/setup's venv, on 127.0.0.1): the C demo writes and reads an array by
# URL through the unchanged caterva 0.5 API; the CLI copies a local array up,
# inspects, verifies and prints it there, and copies it back; Python/Dask
# workers write one with to_caterva and read it back.
#
# For a real bucket, skip the server and export the AWS environment instead:
#   export AWS_REGION=eu-west-1 AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=...
#   target/demo/demo s3://my-bucket/demo.b2frame
# (AWS_ENDPOINT_URL for another S3-compatible service: MinIO, Ceph, R2...).
#
# Expects `cargo build --release` (and, for Python, the package in
# target/interop/pycaterva, as the Python tests build it) to have run.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/target/s3-example
rm -rf "$out"
mkdir -p "$out"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$root/target/interop/moto/bin/python" tests/servers/s3_server.py 127.0.0.1 "$port" >"$out/s3.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    curl -s -o /dev/null "http://127.0.0.1:$port/" && break
    sleep 0.1
done
curl -sf -X PUT "http://127.0.0.1:$port/example" >/dev/null
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test

echo "== the C demo, on S3"
bash examples/demo.sh s3://example/demo.b2frame

echo "== the command-line tool: copy up, inspect, verify, print, copy back"
cli=$root/target/release/caterva
bash examples/demo.sh "$out/kept.b2frame" keep >/dev/null
"$cli" copy --quiet --sparse "$out/kept.b2frame" s3://example/kept.b2nd
"$cli" info s3://example/kept.b2nd
"$cli" verify s3://example/kept.b2nd
"$cli" ls --long s3://example/
"$cli" orphans s3://example/kept.b2nd
"$cli" slice s3://example/kept.b2nd '7,0:3,0:4'
"$cli" copy --quiet --contiguous s3://example/kept.b2nd "$out/back.b2frame"
cmp <("$cli" cat "$out/kept.b2frame") <("$cli" cat "$out/back.b2frame")
echo "copied up and back: the same items"

echo "== Python and Dask, on S3"
"$root/target/interop/pycaterva/bin/python" examples/python/s3_dask.py s3://example/dask.b2nd
echo "s3 example ok"
