//! Chunk lists for schedulers (as c-blosc2's b2nd has them): which chunks a
//! region touches ([`Array::slice_nchunks`]) and which region a chunk holds
//! ([`Array::chunk_region`]), so that work can be split along chunk
//! boundaries.

use super::Array;
use crate::buffer;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{invalid, Result};
use crate::geometry::c_strides;

impl Array {
    /// The chunks that the region `start..stop` touches, by chunk number
    /// (C order of the chunk grid, as `b2nd_get_slice_nchunks` lists them),
    /// so that a thread pool, MPI ranks or Dask can split work along chunk
    /// boundaries: writes to different chunks never touch the same bytes.
    /// An empty region touches no chunk (b2nd lists the chunk holding
    /// `start`); a 0-dim array has one chunk, 0.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `start`/`stop` do not have `ndim`
    /// entries or the region leaves the array.
    pub fn slice_nchunks(&self, start: &[i64], stop: &[i64]) -> Result<Vec<i64>> {
        let region = self.geom.region(start, stop)?;
        let mut out = Vec::new();
        buffer::reserve(&mut out, usize::try_from(self.geom.nchunks_in(&region)).unwrap_or(0), || {
            "the chunk list".into()
        })?;
        self.geom.for_each_chunk_in(&region, |part| out.push(part.nchunk));
        Ok(out)
    }

    /// The region of the array that chunk `nchunk` holds: `(start, stop)`,
    /// `ndim` entries each, cut at the array's edge (the last chunk of an
    /// axis may hold fewer items than the chunk shape).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `nchunk` is not in `0..nchunks`.
    pub fn chunk_region(&self, nchunk: i64) -> Result<(Vec<i64>, Vec<i64>)> {
        let g = &self.geom;
        if nchunk < 0 || nchunk >= g.nchunks() {
            invalid!("chunk {nchunk} is not in 0..{}", g.nchunks());
        }
        let n = g.ndim();
        let grid = g.chunk_grid();
        let strides = c_strides(&grid[..g.dims()]);
        let (mut start, mut stop) = (vec![0i64; n], vec![0i64; n]);
        for i in 0..n {
            let c = i64::from(g.chunkshape()[i]);
            let coord = (nchunk / strides[i]) % grid[i];
            start[i] = coord * c;
            stop[i] = (start[i] + c).min(g.shape()[i]);
        }
        Ok((start, stop))
    }
}
