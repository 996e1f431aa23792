"""Refusals that say what they are (issue 41, item 4): each names what was
refused and why, never a c-blosc2 error number or another failure's words."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import caterva as cat


def test_a_dictionary_with_lz4_is_refused_by_name(tmp_path):
    for codec in (cat.Codec.LZ4, cat.Codec.LZ4HC, cat.Codec.ZLIB):
        with pytest.raises(ValueError, match="use_dict with codec .*ZSTD only") as e:
            cat.asarray(np.arange(1000), codec=codec, usedict=True)
        assert "blosc2 error" not in str(e.value)
    a = cat.asarray(np.arange(1000), codec=cat.Codec.ZSTD, usedict=True, urlpath=str(tmp_path / "d.b2frame"))
    assert (cat.open(tmp_path / "d.b2frame")[:] == np.arange(1000)).all() and a.shape == (1000,)


def test_what_this_build_cannot_decode_is_unsupported_not_damaged(tmp_path):
    # Chunk 0 of a sparse array names filter BYTEDELTA (id 35, a c-blosc2
    # plugin this build lacks) in the filter slot where SHUFFLE was.
    a = cat.asarray(np.arange(400, dtype="i4") // 3, urlpath=str(tmp_path / "b.b2nd"), contiguous=False,
                    chunks=(100,), blocks=(50,), codec=cat.Codec.ZSTD, filters=[cat.Filter.SHUFFLE], filtersmeta=[0])
    chunk = tmp_path / "b.b2nd" / "00000000.chunk"
    raw = bytearray(chunk.read_bytes())
    slot = 16 + list(raw[16:22]).index(1)  # the chunk header's six filter slots
    raw[slot] = 35
    chunk.write_bytes(bytes(raw))
    del a
    b = cat.open(tmp_path / "b.b2nd")
    assert (b[100:200] == np.arange(100, 200, dtype="i4") // 3).all()
    with pytest.raises(cat.UnsupportedError, match="filter BYTEDELTA") as e:
        b[:100]
    assert isinstance(e.value, cat.CatervaError) and str(e.value).startswith("unsupported: ")


def test_a_folder_that_is_no_array_is_said_to_be_none(tmp_path):
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(OSError, match="is not a caterva/blosc2 array: a folder without a chunks index") as e:
        cat.open(folder)
    assert "blosc2 failed" not in str(e.value)
    # A sparse array that lost its index is damaged, not "no array".
    cat.asarray(np.arange(10), urlpath=str(tmp_path / "s.b2nd"), contiguous=False, chunks=(4,), blocks=(2,))
    (tmp_path / "s.b2nd" / "chunks.b2frame").unlink()
    with pytest.raises(cat.CatervaError, match="damaged sparse frame"):
        cat.open(tmp_path / "s.b2nd")


def test_the_source_folder_shadowing_the_package_is_named(tmp_path):
    # A copy of the source layout (pyproject.toml and Cargo.toml beside the
    # package) whose package holds no built extension, as python/ does
    # before `maturin develop`.
    here = os.path.dirname(cat.__file__)
    src = tmp_path / "python"
    shutil.copytree(here, src / "caterva", ignore=shutil.ignore_patterns("_caterva*", "*.so*", "__pycache__"))
    for name in ("pyproject.toml", "Cargo.toml"):
        (src / name).write_text("")
    r = subprocess.run([sys.executable, "-c", "import caterva"], cwd=src, capture_output=True, text=True)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: 'caterva' was imported from its source folder"), r.stderr
    assert "shadows the installed package" in last and "maturin develop" in last, last
    assert "circular import" not in last
    # Elsewhere (no source layout around it), the extension is said to be missing.
    for name in ("pyproject.toml", "Cargo.toml"):
        (src / name).unlink()
    r = subprocess.run([sys.executable, "-c", "import caterva"], cwd=src, capture_output=True, text=True)
    assert "compiled extension (_caterva) is missing" in r.stderr.strip().splitlines()[-1], r.stderr
