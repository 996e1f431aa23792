"""Arrays on a web server (nginx) and an S3-compatible store (moto's
server), both started on 127.0.0.1 here: opened by URL, read as NumPy
reads the local copy, written on S3 (refused writes on the web server),
pickled by URL, and read by
Dask workers in other processes that share no file with this one; Dask
workers (one killed) write an array on S3 with to_caterva."""

import os
import pathlib
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

import caterva as cat

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url, method, path, body=b""):
    """A bare HTTP/1.1 request (moto checks no signature); the status code."""
    port = int(url.rsplit(":", 1)[1])
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(head.encode() + body)
        answer = b""
        while chunk := s.recv(1 << 16):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def _start(cmd, port, log):
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.time() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail(f"{cmd[0]} did not start: see {log.name}")
            time.sleep(0.05)


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """(nginx's URL and root, moto's URL): .ci/setup installs both."""
    d = tmp_path_factory.mktemp("servers")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    moto = ROOT / "target/interop/moto/bin/python"
    if not os.path.exists(nginx) or not moto.exists():
        pytest.fail("nginx and moto are needed (.ci/setup installs them)")
    www, tmp = d / "www", d / "tmp"
    www.mkdir()
    tmp.mkdir()
    port = _free_port()
    temps = "".join(f"  {k}_temp_path {tmp}/{k};\n" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    (d / "nginx.conf").write_text(
        f"daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n"
        f"events {{ worker_connections 256; }}\nhttp {{\n  access_log off;\n{temps}"
        f"  server {{\n    listen 127.0.0.1:{port};\n    root {www};\n  }}\n}}\n"
    )
    log = open(d / "nginx.log", "w")
    web = _start([nginx, "-p", str(d), "-c", str(d / "nginx.conf"), "-e", str(d / "error.log")], port, log)
    s3port = _free_port()
    # moto's app with atomic conditional writes (tests/servers/s3_server.py).
    server = ROOT / "tests/servers/s3_server.py"
    s3 = _start([str(moto), str(server), "127.0.0.1", str(s3port)], s3port, open(d / "moto.log", "w"))
    s3url = f"http://127.0.0.1:{s3port}"
    assert _request(s3url, "PUT", "/arrays") == 200
    # Before the first S3 request of this process (and inherited by Dask's workers).
    os.environ.update(
        AWS_ENDPOINT_URL=s3url,
        AWS_ALLOW_HTTP="true",
        AWS_ACCESS_KEY_ID="test",
        AWS_SECRET_ACCESS_KEY="test",
        AWS_REGION="us-east-1",
    )
    yield f"http://127.0.0.1:{port}", www, s3url
    web.kill()
    s3.kill()


def _publish(local, name, www, s3url):
    """Copy the array at `local` to the web root and the bucket as `name`."""
    files = [(local, "")] if os.path.isfile(local) else [
        (os.path.join(local, f), "/" + f) for f in sorted(os.listdir(local))
    ]
    for path, rest in files:
        data = pathlib.Path(path).read_bytes()
        target = www / (name + rest)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        assert _request(s3url, "PUT", f"/arrays/{name}{rest}", data) == 200


@pytest.mark.parametrize("contiguous", [True, False])
def test_remote_arrays_read_as_numpy_reads_them(servers, tmp_path, contiguous):
    web, www, s3url = servers
    want = np.arange(30 * 41 * 17, dtype=np.float64).reshape(30, 41, 17) * 0.5
    name = f"a-{contiguous}.b2nd"
    local = str(tmp_path / name)
    cat.asarray(want, urlpath=local, contiguous=contiguous, chunks=(10, 16, 8), blocks=(5, 4, 4))
    _publish(local, name, www, s3url)
    for url in (f"{web}/{name}", f"s3://arrays/{name}"):
        a = cat.open(url)
        np.testing.assert_array_equal(a[...], want)
        np.testing.assert_array_equal(a[3:29:2, 5, ::3], want[3:29:2, 5, ::3])
        np.testing.assert_array_equal(a[[1, 7, 2], :, 4], want[[1, 7, 2], :, 4])
        now = want
        if url.startswith("s3://"):
            # Written on S3: new chunk objects, then the frame replaced if unchanged.
            now = want.copy()
            a[0, 0, 0] = 1.0
            a[2:25:3, 7:30, 3] = -2.5
            now[0, 0, 0] = 1.0
            now[2:25:3, 7:30, 3] = -2.5
            np.testing.assert_array_equal(a[...], now)
            np.testing.assert_array_equal(cat.open(url)[...], now)
        else:
            # A web server is read-only.
            with pytest.raises(OSError):
                a[0, 0, 0] = 1.0
            np.testing.assert_array_equal(a[...], want)
        import pickle

        np.testing.assert_array_equal(pickle.loads(pickle.dumps(a))[...], now)
    with pytest.raises(OSError):
        cat.open(f"{web}/nothing.b2nd")


def test_dask_workers_read_remote_arrays(servers, tmp_path):
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    web, www, s3url = servers
    want = np.arange(64 * 50, dtype=np.int32).reshape(64, 50)
    local = str(tmp_path / "d.b2nd")
    cat.asarray(want, urlpath=local, chunks=(16, 25), blocks=(8, 5))
    _publish(local, "d.b2nd", www, s3url)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True) as cluster:
        with distributed.Client(cluster):
            for url in (f"{web}/d.b2nd", "s3://arrays/d.b2nd"):
                x = da.from_array(cat.open(url), chunks=(16, 25))
                np.testing.assert_array_equal(x.compute(), want)
                assert int((x * 2).sum().compute()) == int(want.sum()) * 2


def _kill_own_worker_once(block, marker):
    """The first call (over all workers) SIGKILLs its worker process, as a
    machine lost mid-computation; Dask runs the task again elsewhere."""
    import signal

    if block.size == 0:
        return block  # Dask's probe of the output type, in this process
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return block
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def test_dask_writes_to_s3_from_worker_processes(servers, tmp_path):
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    web, www, s3url = servers
    want = np.arange(60 * 44, dtype=np.float64).reshape(60, 44) * 1.5
    # Dask's chunks cut caterva's: workers write parts of the same chunks.
    x = da.from_array(want, chunks=(13, 17))
    marker = str(tmp_path / "killed")
    x = x.map_blocks(_kill_own_worker_once, marker, dtype=x.dtype)
    url = "s3://arrays/dask-written.b2nd"
    with distributed.LocalCluster(n_workers=3, threads_per_worker=2, processes=True) as cluster:
        with distributed.Client(cluster):
            a = cat.dask.to_caterva(x.rechunk((13, 17)), url, chunks=(20, 22), blocks=(5, 11))
            assert os.path.exists(marker), "a worker was killed"
            np.testing.assert_array_equal(a[...], want)
            np.testing.assert_array_equal(cat.open(url)[...], want)
            # Read back by the workers.
            y = da.from_array(cat.open(url), chunks=(20, 22))
            np.testing.assert_array_equal(y.compute(), want)
    # An array there already: refused unless mode="w".
    with pytest.raises(FileExistsError):
        cat.dask.to_caterva(da.from_array(want, chunks=(20, 22)), url)
    with pytest.raises(FileExistsError):
        cat.zeros((3,), urlpath=url)
    b = cat.asarray(want[:5], urlpath=url, mode="w")
    np.testing.assert_array_equal(cat.open(url)[...], want[:5])
    del b



def test_remove_orphans_takes_only_unnamed_chunk_objects(servers):
    """A chunk object no index names (what a writer killed between its
    chunk and its index left) goes once old enough; the array's own stay."""
    web, www, s3url = servers
    url = "s3://arrays/orphans.b2nd"
    want = np.arange(40 * 30, dtype=np.int32).reshape(40, 30)
    a = cat.asarray(want, urlpath=url, chunks=(20, 15), blocks=(10, 5), contiguous=False, mode="w")
    a[3:25, 2:20] = -7
    want[3:25, 2:20] = -7
    assert _request(s3url, "PUT", "/arrays/orphans.b2nd/0BADC0DE.chunk", b"left by a killed writer") == 200
    assert a.remove_orphans(older_than=3600) == 0, "too young"
    assert a.remove_orphans(older_than=0) == 1
    assert _request(s3url, "HEAD", "/arrays/orphans.b2nd/0BADC0DE.chunk") == 404
    assert a.remove_orphans(older_than=0) == 0
    np.testing.assert_array_equal(cat.open(url)[...], want)
    assert cat.open(url).verify() == []
    with pytest.raises(ValueError):
        a.remove_orphans(older_than=-1)
    # Elsewhere there is nothing to remove.
    assert cat.asarray(want, urlpath=str(www / "local.b2nd"), mode="w").remove_orphans(0) == 0


def test_listing_and_storage_options(servers, tmp_path):
    """list_arrays finds the arrays under a prefix; storage_options as zarr
    and fsspec name them reach the client (an endpoint where nothing
    listens fails fast; s3fs's client_kwargs are taken)."""
    web, www, s3url = servers
    want = np.arange(100, dtype=np.float32)
    cat.asarray(want, urlpath="s3://arrays/listed/a.b2nd", contiguous=False, mode="w")
    cat.asarray(want, urlpath="s3://arrays/listed/b.b2frame", contiguous=True, mode="w")
    got = cat.list_arrays("s3://arrays/listed/")
    assert [(g["name"], g["contiguous"]) for g in got] == [("a.b2nd", False), ("b.b2frame", True)]
    assert all(g["bytes"] > 0 for g in got)
    np.testing.assert_array_equal(cat.open(got[0]["url"])[...], want)
    # An endpoint given per call, over the environment's.
    url = "s3://arrays/listed/a.b2nd"
    with pytest.raises(OSError, match="127.0.0.1:9"):
        cat.open(url, storage_options={"endpoint_url": "http://127.0.0.1:9", "retries": 0, "timeout": 2})
    a = cat.open(url, storage_options={"client_kwargs": {"endpoint_url": s3url, "region_name": "us-east-1"}})
    np.testing.assert_array_equal(a[...], want)
    with pytest.raises(ValueError, match="not a storage option"):
        cat.open(url, storage_options={"colour": "red"})
    with pytest.raises(ValueError, match="URLs"):
        cat.open(str(tmp_path / "x.b2nd"), storage_options={"anon": True})
    cat.set_storage_options(url, {})
    np.testing.assert_array_equal(cat.open(url)[...], want)


@pytest.mark.parametrize("contiguous", [True, False])
def test_read_cache_in_storage_options(servers, tmp_path, contiguous):
    """storage_options={"cache": dir} keeps what a read fetched on disk, for
    every handle; a write by another handle is read, not the cached pages;
    a web server's array is cached as well."""
    web, www, s3url = servers
    cache = tmp_path / "cache"
    url = f"s3://arrays/cached-{contiguous}.b2nd"
    want = np.arange(40 * 50, dtype=np.int64).reshape(40, 50)
    cat.asarray(want, urlpath=url, contiguous=contiguous, chunks=(20, 25), blocks=(10, 25), mode="w")
    opts = {"cache": str(cache), "cache_size": "64M"}
    np.testing.assert_array_equal(cat.open(url, storage_options=opts)[...], want)
    assert any(p.is_file() for p in cache.rglob("*"))
    w = cat.open(url, mode="a")
    w[3:5, :] = -1
    want[3:5, :] = -1
    np.testing.assert_array_equal(cat.open(url)[...], want)
    np.testing.assert_array_equal(cat.open(url)[...], want)
    cat.set_storage_options(url, {})
    # A web server's copy, through a cache of its own.
    local = str(tmp_path / "w.b2nd")
    cat.asarray(want, urlpath=local, contiguous=contiguous, chunks=(20, 25), blocks=(10, 25))
    name = f"cached-web-{contiguous}.b2nd"
    _publish(local, name, www, s3url)
    webcache = tmp_path / "webcache"
    for _ in range(2):
        a = cat.open(f"{web}/{name}", storage_options={"cache_storage": str(webcache)})
        np.testing.assert_array_equal(a[...], want)
    assert any(p.is_file() for p in webcache.rglob("*"))
    with pytest.raises(ValueError, match="cache_size"):
        cat.open(url, storage_options={"cache": str(cache), "cache_size": "lots"})


def test_mode_w_replaces_either_layout_at_a_url(servers):
    """mode='w' at a URL replaces what is there, of either layout (asked
    of the server only when the core finds the other layout); 'w-' refuses."""
    url = "s3://arrays/relayout.b2nd"
    for contiguous in (True, False, False, True):
        want = np.arange(300, dtype=np.int32).reshape(10, 30) * (2 if contiguous else 3)
        a = cat.asarray(want, urlpath=url, contiguous=contiguous, mode="w")
        assert a.contiguous == contiguous
        b = cat.open(url, mode="r")
        assert b.contiguous == contiguous
        np.testing.assert_array_equal(b[...], want)
    with pytest.raises(FileExistsError):
        cat.asarray(want, urlpath=url, contiguous=True)
    np.testing.assert_array_equal(cat.open(url)[...], want)


def test_xarray_datasets_on_s3_and_a_web_server(servers, tmp_path):
    """A Dataset written to an S3 prefix (one array per variable, sparse and
    contiguous), added to and replaced there, opens as the same Dataset
    written locally; a web server, which lists nothing, serves one through
    the variables its .xarray.b2frame names; a sparse DataArray at a URL
    opens as that one array."""
    xr = pytest.importorskip("xarray")
    import pandas as pd
    from caterva.xarray_backend import to_caterva

    web, www, s3url = servers
    ds = xr.Dataset(
        {"t": (("time", "station"), np.arange(24, dtype="f4").reshape(6, 4), {"units": "K"}),
         "flag": ("station", np.array([True, False, True, True]))},
        coords={"time": pd.date_range("2026-05-01", periods=6), "station": ["a", "bb", "c", "d"]},
        attrs={"title": "remote"},
    )
    ds.t.encoding = {"dtype": "int16", "scale_factor": 0.5, "_FillValue": -1}
    ds["t"][2, 1] = np.nan
    to_caterva(ds, tmp_path / "local", encoding={"flag": {"contiguous": True}})
    want = xr.open_dataset(tmp_path / "local", engine="caterva").load()
    url = "s3://arrays/dataset"
    to_caterva(ds.drop_vars("flag"), url)
    to_caterva(ds[["flag"]], url, mode="a", encoding={"flag": {"contiguous": True}})
    assert [(a["name"], a["contiguous"]) for a in cat.list_arrays(url)] == [
        ("flag.b2nd", True), ("station.b2nd", False), ("t.b2nd", False), ("time.b2nd", False)]
    xr.testing.assert_identical(xr.open_dataset(url, engine="caterva").load(), want)
    # storage_options reach the listing, the marker and every array.
    opts = {"client_kwargs": {"endpoint_url": s3url, "region_name": "us-east-1"}}
    xr.testing.assert_identical(xr.open_dataset(url, engine="caterva", storage_options=opts).load(), want)
    with pytest.raises(OSError, match="127.0.0.1:9"):
        xr.open_dataset(url + "/", engine="caterva",
                        storage_options={"endpoint_url": "http://127.0.0.1:9", "retries": 0, "timeout": 2})
    cat.set_storage_options(url + "/", {})
    with pytest.raises(FileExistsError):
        to_caterva(ds, url)
    to_caterva(ds[["flag"]], url, mode="w")
    assert [a["name"] for a in cat.list_arrays(url)] == ["flag.b2nd", "station.b2nd"]
    xr.testing.assert_identical(xr.open_dataset(url, engine="caterva").load(), want[["flag"]])
    # A web server: the local folder copied under its root.
    shutil.copytree(tmp_path / "local", www / "dataset")
    xr.testing.assert_identical(xr.open_dataset(f"{web}/dataset", engine="caterva").load(), want)
    with pytest.raises(FileNotFoundError, match="a web server lists nothing"):
        xr.open_dataset(f"{web}/nothing", engine="caterva")
    to_caterva(ds.t, "s3://arrays/t.b2nd")
    xr.testing.assert_identical(xr.open_dataarray("s3://arrays/t.b2nd", engine="caterva").load(), want.t)
