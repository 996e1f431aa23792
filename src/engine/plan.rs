//! What a job touches and may write: the chunk parts of a region ([`plan`]),
//! how many chunk tasks a round of a long job takes ([`batch_len`]), and the
//! checks of the caller's buffer.

use crate::buffer::reserve;
use crate::context::Context;
use crate::error::{Error, Result};
use crate::geometry::{ChunkPart, Geometry, Region};

/// How many chunk tasks one round of a long job hands the workers: a few
/// per thread keeps them busy while bounding the compressed chunks held in
/// memory and keeping progress reports fine-grained.
pub(crate) fn batch_len(ctx: &Context) -> usize {
    (ctx.nthreads() * 4).max(16)
}

/// The parts of the chunks that `region` touches, in chunk order: the plan
/// of every read and write.
///
/// # Errors
/// [`Error::Io`] (out of memory) if the plan does not fit in memory: a huge
/// region is an error, not an abort.
pub(crate) fn plan(geom: &Geometry, region: &Region) -> Result<Vec<ChunkPart>> {
    let count = usize::try_from(geom.nchunks_in(region)).unwrap_or(usize::MAX);
    let mut parts = Vec::new();
    reserve(&mut parts, count, || format!("the plan of {count} chunks"))?;
    geom.for_each_chunk_in(region, |p| parts.push(p));
    Ok(parts)
}

/// Check that a user buffer of `len` bytes and shape `shape` can hold `region`.
///
/// # Errors
/// [`Error::InvalidArgument`] otherwise.
pub(crate) fn check_user_buffer(geom: &Geometry, region: &Region, shape: &[i64], len: usize) -> Result<()> {
    check_buffer_fits(geom, &region.shape(), "slice", shape, len)
}

/// Check that a user buffer of `len` bytes and shape `shape` can hold a box
/// of shape `need` (a slice or a selection).
pub(super) fn check_buffer_fits(geom: &Geometry, need: &[i64], what: &str, shape: &[i64], len: usize) -> Result<()> {
    if shape.len() != geom.ndim() {
        return Err(Error::InvalidArgument(format!(
            "buffer shape has {} entries, ndim is {}",
            shape.len(),
            geom.ndim()
        )));
    }
    if (0..shape.len()).any(|i| shape[i] < need[i]) {
        return Err(Error::InvalidArgument(format!("buffer shape {shape:?} cannot hold a {what} of shape {need:?}")));
    }
    let bytes = crate::geometry::checked_product(shape)
        .and_then(|n| n.checked_mul(geom.itemsize() as i64))
        .ok_or_else(|| Error::InvalidArgument("buffer shape overflows".into()))?;
    if (len as u128) < bytes as u128 {
        return Err(Error::InvalidArgument(format!(
            "buffer of {len} bytes is smaller than the {bytes} its shape needs"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_checks() {
        let g = Geometry::new(4, &[6, 5], &[3, 5], &[3, 5]).unwrap();
        let r = g.region(&[1, 0], &[3, 5]).unwrap();
        assert!(check_user_buffer(&g, &r, &[2, 5], 40).is_ok());
        assert!(check_user_buffer(&g, &r, &[3, 6], 72).is_ok());
        assert!(check_user_buffer(&g, &r, &[2, 5], 39).is_err());
        assert!(check_user_buffer(&g, &r, &[1, 5], 400).is_err());
        assert!(check_user_buffer(&g, &r, &[2, -5], 400).is_err());
        assert!(check_user_buffer(&g, &r, &[2], 400).is_err());
        assert!(check_user_buffer(&g, &r, &[i64::MAX, 5], usize::MAX).is_err());
    }
}
