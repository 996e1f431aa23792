"""Durability levels: the `durability` keyword of the constructors and
`open`, the `NDArray.durability` property, the syncs each level makes
(counted with strace where it runs), and writes killed at the level
without syncs."""

import os
import pickle
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import caterva as cat

KINDS = ["sparse", "contiguous"]


def where(kind, tmp_path, name="a"):
    ext = "b2nd" if kind == "sparse" else "b2frame"
    return {"urlpath": str(tmp_path / f"{name}.{ext}"), "contiguous": kind == "contiguous"}


def test_default_is_full_and_levels_are_accepted(tmp_path):
    a = cat.zeros((4, 4), dtype="i4", **where("contiguous", tmp_path))
    assert a.durability == "full"
    for level in ("process", "normal", "full"):
        b = cat.zeros((4, 4), dtype="i4", durability=level, **where("sparse", tmp_path, level))
        assert b.durability == level
        assert cat.open(b.urlpath, durability=level).durability == level
        assert cat.open(b.urlpath).durability == "full"
    m = cat.asarray(np.arange(6), durability="process")  # in memory: kept, nothing to sync
    assert m.durability == "process"


@pytest.mark.parametrize("bad", ["Full", "none", "", 1, None, b"full"])
def test_bad_levels_are_refused(tmp_path, bad):
    url = where("contiguous", tmp_path)
    with pytest.raises(ValueError, match="durability must be one of"):
        cat.zeros((4, 4), dtype="i4", durability=bad, **url)
    assert not os.path.exists(url["urlpath"])
    a = cat.zeros((4, 4), dtype="i4", **url)
    with pytest.raises(ValueError, match="durability must be one of"):
        cat.open(url["urlpath"], durability=bad)
    with pytest.raises(ValueError, match="durability must be one of"):
        a.durability = bad
    assert a.durability == "full"


@pytest.mark.parametrize("kind", KINDS)
def test_property_round_trip_and_data_at_both_levels(tmp_path, kind):
    ref = np.arange(40 * 30, dtype="f8").reshape(40, 30)
    a = cat.asarray(ref, chunks=(10, 30), blocks=(5, 30), durability="process", **where(kind, tmp_path))
    for i, level in enumerate(["process", "full", "normal", "process", "normal", "full"]):
        a.durability = level
        assert a.durability == level
        a[i * 7] = -ref[i * 7]
        ref[i * 7] = -ref[i * 7]
        a.append(np.full((1, 30), i, dtype="f8"))
        ref = np.concatenate([ref, np.full((1, 30), i, dtype="f8")])
        a.vlmeta["step"] = i
        assert a.durability == level  # kept by writes and reshapes
    a.squeeze()  # a no-op relayout here; the level stays
    assert a.durability == "full"
    b = cat.open(a.urlpath, durability="process")
    np.testing.assert_array_equal(b[...], ref)
    assert b.vlmeta["step"] == 5
    assert pickle.loads(pickle.dumps(b)).durability == "process"
    c = a.copy(urlpath=where(kind, tmp_path, "c")["urlpath"], durability="process")
    assert c.durability == "process"
    np.testing.assert_array_equal(c[...], ref)
    a.close()
    with pytest.raises(ValueError, match="closed"):
        a.durability = "full"


WRITER = textwrap.dedent(
    """
    import sys, numpy as np, caterva as cat
    url, level, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    a = cat.open(url, durability=level)
    print("READY", flush=True)
    for i in range(n):
        a[i % a.shape[0]] = np.full(a.shape[1], i + 1, dtype=a.dtype)
    a.close()
    """
)


def _strace_works():
    if shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-o", os.devnull, "true"], capture_output=True).returncode == 0


@pytest.mark.skipif(not _strace_works(), reason="needs a working strace")
@pytest.mark.parametrize("kind", KINDS)
def test_syncs_of_one_row_writes_per_level(tmp_path, kind):
    """Full: 3 syncs a write to a frame file (journal data, journal name,
    frame), 6 to a directory (the undo folder keeping the old chunk file by
    a second name, journal data and name, index, the new chunk file, the
    directory it was renamed into) and one more when the handle closes (the
    last journal's removal, before the old chunk file it kept goes; each
    earlier one is made durable by the next write's journal); process:
    none. Counted as system calls."""
    if os.environ.get("CATERVA_JOURNAL_SYNC") == "0":
        pytest.skip("CATERVA_JOURNAL_SYNC=0 turns every sync off")
    url = where(kind, tmp_path)["urlpath"]
    a = cat.zeros((100, 50), dtype="f8", chunks=(10, 50), blocks=(5, 50), **where(kind, tmp_path))
    a[...] = 1.0
    a.close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    n = 5
    for level, per_write, at_close in [("full", 3, 0) if kind == "contiguous" else ("full", 6, 1), ("process", 0, 0)]:
        log = tmp_path / f"strace-{level}.txt"
        subprocess.run(
            ["strace", "-f", "-o", str(log), "-e", "trace=fsync,fdatasync,sync_file_range,sync,syncfs",
             sys.executable, str(script), url, level, str(n)],
            check=True, capture_output=True,
        )
        calls = [line for line in log.read_text().splitlines() if "sync" in line and "resumed" not in line]
        # A chunk file written by a synced write starts its writeback when
        # closed (sync_file_range without a wait): not a sync.
        started = [c for c in calls if "sync_file_range" in c and "WAIT" not in c]
        calls = [c for c in calls if c not in started]
        assert len(calls) == n * per_write + at_close, (level, calls)
        assert len(started) == (n if level == "full" and kind != "contiguous" else 0), (level, started)
    b = cat.open(url)
    np.testing.assert_array_equal(b[:n], np.arange(1, n + 1, dtype="f8")[:, None] * np.ones((1, 50)))


@pytest.mark.parametrize("kind", KINDS)
def test_killed_writers_at_process_level_leave_whole_writes(tmp_path, kind):
    """A writer at 'process' (no syncs) SIGKILLed mid-loop: the array opens,
    and rows 0..k hold the writes that reached them whole, the rest their
    old value (every write all-or-nothing, in order)."""
    url = where(kind, tmp_path)["urlpath"]
    rows, cols = 60, 40
    cat.zeros((rows, cols), dtype="i8", chunks=(8, 40), blocks=(4, 20), **where(kind, tmp_path)).close()
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(7)
    for kill in range(4):
        with subprocess.Popen([sys.executable, str(script), url, "process", str(rows)],
                              stdout=subprocess.PIPE, text=True) as p:
            assert p.stdout.readline().strip() == "READY"
            time.sleep(rng.uniform(0.0, 0.05))
            p.send_signal(signal.SIGKILL)
            p.wait()
        a = cat.open(url)
        got = a[...]
        # Row i was last set to i + 1 (by this writer or an earlier one) or is still 0.
        for i in range(rows):
            assert np.all(got[i] == got[i][0]), f"kill {kill}: row {i} is torn: {got[i]}"
            assert got[i][0] in (0, i + 1), f"kill {kill}: row {i} holds {got[i][0]}"
        done = [i for i in range(rows) if got[i][0]]
        # Writes come in order: the rows written form a prefix.
        assert done == list(range(len(done))), f"kill {kill}: rows written {done}"
        a.close()


@pytest.mark.parametrize("kind", KINDS)
def test_normal_writes_are_seen_at_once_and_durable_at_close(tmp_path, kind):
    """At 'normal', writes of one handle share a journal (an epoch) that
    stays while the handle is open: another handle sees each write at once;
    closing the writer ends the epoch (the journal goes)."""
    url = where(kind, tmp_path)["urlpath"]
    a = cat.zeros((100, 10), dtype="i8", chunks=(10, 10), blocks=(5, 10), durability="normal", **where(kind, tmp_path))
    for i in range(30):
        a[i] = i
    journal = url + ".caterva-journal"
    assert os.path.exists(journal)
    b = cat.open(url)
    np.testing.assert_array_equal(b[:30, 0], np.arange(30))
    b.close()
    a.close()
    assert not os.path.exists(journal)
    np.testing.assert_array_equal(cat.open(url)[:30, 0], np.arange(30))
