"""Dask workers writing an array on S3, then reading it back.

Usage: python s3_dask.py s3://bucket/key   (with the AWS environment set:
examples/s3.sh sets it for its local S3 server)."""

import sys

import dask.array as da
import distributed
import numpy as np

import caterva as cat


def main(url):
    want = np.arange(200 * 300, dtype=np.float32).reshape(200, 300) / 7
    # Dask's chunks cut caterva's: several workers write parts of one chunk;
    # each write is published only if nobody changed the array meanwhile,
    # else made again on the new version, so nothing is lost.
    x = da.from_array(want, chunks=(30, 70))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=2, processes=True) as cluster:
        with distributed.Client(cluster):
            a = cat.dask.to_caterva(x, url, chunks=(50, 100), blocks=(10, 50), mode="w")
            y = da.from_array(cat.open(url), chunks=(50, 100))
            total = float(y.sum().compute())
    np.testing.assert_array_equal(a[...], want)
    np.testing.assert_array_equal(cat.open(url)[10:190:3, 7], want[10:190:3, 7])
    print(f"{url}: {a.shape} {a.dtype} written by Dask workers, read back equal; sum {total:.6g}")


if __name__ == "__main__":
    main(sys.argv[1])
