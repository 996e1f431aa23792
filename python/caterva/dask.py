"""Dask: caterva arrays as sources (``dask.array.from_array(arr,
chunks=arr.chunks)``, no lock needed) and targets (``dask.array.store(x,
arr, lock=False)`` or :func:`to_caterva`) of parallel computations.

Writers in several processes share one persisted array: each write of a
block takes the array's lock file, loads what other writers committed,
writes (journaled: a killed writer's partial write is rolled back by the
next handle that takes the lock) and lets go. Blocks that cover whole
chunks never read old data, so they cost no more than the write."""

from .constructors import open as open_, zeros


def to_caterva(x, urlpath, chunks=None, blocks=None, compute=True, **kwargs):
    """Store the dask array `x` in a new persisted array at `urlpath`
    (a sparse-frame directory unless ``contiguous=True``), written in
    parallel by Dask's workers. `chunks` defaults to `x`'s chunk shape
    (`x` is rechunked to it when they differ). An array already at
    `urlpath` is an error unless ``mode="w"``. The array keeps checksums
    unless ``checksums=False``. Returns the array when
    `compute`, else ``(array, delayed)`` to compute later."""
    import dask.array as da

    if chunks is None:
        chunks = tuple(max(c) if c else 1 for c in x.chunks)
    chunks = tuple(int(c) for c in chunks)
    if tuple(c[0] if c else 0 for c in x.chunks) != chunks[: x.ndim] or any(len(set(c[:-1])) > 1 for c in x.chunks):
        x = x.rechunk(chunks)
    # As da.to_zarr: an existing array is an error unless mode="w" says replace it.
    kwargs.setdefault("mode", "w-")
    # Readers of an array being written recognise a chunk rewritten under
    # them by its checksum (and read it again).
    kwargs.setdefault("checksums", True)
    arr = zeros(x.shape, dtype=x.dtype, chunks=chunks, blocks=blocks, urlpath=urlpath, **kwargs)
    arr.close()
    target = open_(urlpath, mode="a")
    stored = da.store(x, target, lock=False, compute=compute)
    if compute:
        target.refresh()
        return target
    return target, stored
