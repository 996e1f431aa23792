"""multiprocessing with the fork start method: children use arrays (and
their contexts, thread pools included) made before the fork."""

import multiprocessing as mp
import threading

import numpy as np
import pytest

import caterva as cat

REF = np.arange(60 * 40, dtype=np.float64).reshape(60, 40)
ARRAYS = {}


def _read(args):
    name, i = args
    return np.array_equal(ARRAYS[name][i * 10:(i + 1) * 10], REF[i * 10:(i + 1) * 10])


def _write(args):
    name, i = args
    ARRAYS[name][i * 10:(i + 1) * 10] = -REF[i * 10:(i + 1) * 10]
    return i


@pytest.fixture
def arrays(tmp_path):
    # Made (and used, so their thread pools run) before the fork.
    ARRAYS["memory"] = cat.asarray(REF, chunks=(10, 20), blocks=(5, 10), nthreads=2)
    ARRAYS["sparse"] = cat.asarray(REF, chunks=(10, 20), blocks=(5, 10), nthreads=2, urlpath=str(tmp_path / "f.b2nd"))
    ARRAYS["contiguous"] = cat.asarray(REF, chunks=(10, 20), blocks=(5, 10), nthreads=2, contiguous=True,
                                       urlpath=str(tmp_path / "f.b2frame"))
    for a in ARRAYS.values():
        np.testing.assert_array_equal(a[:], REF)
    yield ARRAYS
    ARRAYS.clear()


@pytest.mark.parametrize("name", ["memory", "sparse", "contiguous"])
def test_fork_children_read_and_write(arrays, name):
    ctx = mp.get_context("fork")
    with ctx.Pool(3) as pool:
        assert all(pool.map(_read, [(name, i) for i in range(6)]))
        if name == "memory":
            return
        # Children write disjoint chunks of the inherited persisted array:
        # each write first loads what the others committed.
        assert sorted(pool.map(_write, [(name, i) for i in range(6)])) == list(range(6))
    a = arrays[name]
    a.refresh()
    np.testing.assert_array_equal(a[:], -REF)
    np.testing.assert_array_equal(cat.open(a.urlpath)[:], -REF)


def test_fork_while_another_thread_reads(arrays):
    """Forks taken while a thread of the parent reads an array."""
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            assert np.array_equal(arrays["memory"][::3], REF[::3])

    t = threading.Thread(target=reader)
    t.start()
    try:
        ctx = mp.get_context("fork")
        for _ in range(5):
            with ctx.Pool(2) as pool:
                assert all(pool.map(_read, [("memory", i) for i in range(6)] + [("sparse", i) for i in range(6)]))
    finally:
        stop.set()
        t.join()
