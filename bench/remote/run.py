"""The remote benchmark (bench/remote/README.md): the same array written and
read on an S3 server through a proxy adding DELAY ms per request, by
caterva-rs, zarr 3 (plain and sharded, obstore) and TensorStore (zarr3,
sharded, its s3 kvstore). python-blosc2 reads remote arrays only from a
Caterva2 server, not from S3 or plain HTTP: it has no column.

    python run.py [--delay MS] [--only lib,lib] [--out results]

Writes OUT.json (every library's medians, requests and bytes per operation)
and OUT.md (the table). Needs .ci/setup's venvs: target/interop/moto
(moto), target/interop/pycaterva (ours, built by the Python tests) and
target/compare/venv (zarr, obstore, tensorstore: bench/compare/run.sh).
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIBS = ["caterva", "zarr", "zarr-sharded", "tensorstore"]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait(port):
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"nothing listens on {port}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--delay", type=float, default=10.0)
    ap.add_argument("--only", default=",".join(LIBS))
    ap.add_argument("--out", default=str(ROOT / "bench/remote/results"))
    args = ap.parse_args()
    s3port, pport = free_port(), free_port()
    procs = [
        subprocess.Popen([str(ROOT / "target/interop/moto/bin/python"), str(ROOT / "tests/servers/s3_server.py"),
                          "127.0.0.1", str(s3port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen([sys.executable, str(ROOT / "bench/remote/proxy.py"), str(pport), str(s3port), str(args.delay)]),
    ]
    try:
        wait(s3port)
        wait(pport)
        urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{s3port}/bench", method="PUT")).read()
        endpoint = f"http://127.0.0.1:{pport}"
        env = dict(os.environ, AWS_ENDPOINT_URL=endpoint, AWS_ALLOW_HTTP="true", AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test")
        results = []
        for lib in args.only.split(","):
            venv = "target/interop/pycaterva" if lib == "caterva" else "target/compare/venv"
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                print(f"== {lib}", flush=True)
                subprocess.run([str(ROOT / venv / "bin/python"), str(ROOT / "bench/remote/drive.py"), lib, endpoint,
                                endpoint, out.name], env=env, check=True)
                results.append(json.loads(Path(out.name).read_text()))
    finally:
        for p in procs:
            p.kill()
    Path(args.out + ".json").write_text(json.dumps({"delay_ms": args.delay, "results": results}, indent=1))
    libs = [r["lib"] for r in results]
    ops = list(results[0]["ops"])
    lines = [f"Remote benchmark: 192^3 float32 (28 MiB), chunks 64^3 (zarr-sharded, tensorstore: shards 64^3 of 16^3 chunks; "
             f"caterva: blocks 16^3), zstd 5 + shuffle, moto's S3 server behind a proxy adding {args.delay:g} ms per request. "
             "Median seconds; requests and MiB relayed for one repetition.", "",
             "| operation | " + " | ".join(libs) + " |", "|---|" + "---:|" * len(libs)]
    for op in ops:
        cells = []
        for r in results:
            o = r["ops"][op]
            cells.append(f"{o['s']:.3f} s, {o['requests']} req, {o['bytes'] / 2**20:.2f} MiB")
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
