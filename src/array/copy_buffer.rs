//! [`copy_buffer()`]: copying an N-d box between C-order buffers (as
//! c-blosc2's `b2nd_copy_buffer` does).

#[cfg(doc)]
use crate::error::Error;
use crate::error::{invalid, Result};
use crate::geometry::{c_strides, checked_product, MAX_DIM};
use crate::reshape;

/// Copy the box `src_start..src_stop` of `src`, a C-order buffer of
/// `src_pad_shape` items of `itemsize` bytes, into `dst`, a C-order buffer of
/// `dst_pad_shape` items, at `dst_start` (as `b2nd_copy_buffer` does). Items
/// of `dst` outside the box are left as they are. Runs of the last axis
/// are copied with one `memcpy` each, by the routine that builds chunks
/// from boxes in reshapes. A 0-dim copy moves one item.
///
/// # Errors
/// [`Error::InvalidArgument`] if the shapes and positions do not have the
/// same number of entries (at most [`MAX_DIM`]), `itemsize` is 0, a shape is
/// negative, the box does not lie inside `src_pad_shape` or, moved to
/// `dst_start`, inside `dst_pad_shape`, or a buffer is smaller than its
/// shape. Nothing is written then.
#[allow(clippy::too_many_arguments)]
pub fn copy_buffer(
    itemsize: usize,
    src: &[u8],
    src_pad_shape: &[i64],
    src_start: &[i64],
    src_stop: &[i64],
    dst: &mut [u8],
    dst_pad_shape: &[i64],
    dst_start: &[i64],
) -> Result<()> {
    let n = src_pad_shape.len();
    if n > MAX_DIM {
        invalid!("{n} dimensions; at most {MAX_DIM}");
    }
    if [src_start.len(), src_stop.len(), dst_pad_shape.len(), dst_start.len()].iter().any(|&l| l != n) {
        invalid!("src_pad_shape, src_start, src_stop, dst_pad_shape and dst_start need {n} entries each");
    }
    if itemsize == 0 {
        invalid!("itemsize is 0");
    }
    let fits = |what: &str, shape: &[i64], len: usize| -> Result<()> {
        if let Some(i) = shape.iter().position(|&s| s < 0) {
            invalid!("{what}[{i}] = {} is negative", shape[i]);
        }
        let need = checked_product(shape)
            .and_then(|p| usize::try_from(p).ok())
            .and_then(|p| p.checked_mul(itemsize))
            .ok_or_else(|| crate::error::Error::InvalidArgument(format!("{what} {shape:?} overflows")))?;
        if len < need {
            invalid!(
                "a buffer of {len} bytes is smaller than {what} {shape:?} of {itemsize}-byte items ({need} bytes)"
            );
        }
        Ok(())
    };
    fits("src_pad_shape", src_pad_shape, src.len())?;
    fits("dst_pad_shape", dst_pad_shape, dst.len())?;
    let mut shape = vec![0i64; n];
    for i in 0..n {
        if src_start[i] < 0 || src_start[i] > src_stop[i] || src_stop[i] > src_pad_shape[i] {
            invalid!("source box {}..{} on axis {i} is not inside 0..{}", src_start[i], src_stop[i], src_pad_shape[i]);
        }
        shape[i] = src_stop[i] - src_start[i];
        if dst_start[i] < 0 || dst_start[i] > dst_pad_shape[i] - shape[i] {
            invalid!(
                "{} items from {} on axis {i} do not fit in the destination's 0..{}",
                shape[i],
                dst_start[i],
                dst_pad_shape[i]
            );
        }
    }
    if n == 0 {
        dst[..itemsize].copy_from_slice(&src[..itemsize]);
        return Ok(());
    }
    if shape.contains(&0) {
        return Ok(());
    }
    let (ss, ds) = (c_strides(src_pad_shape), c_strides(dst_pad_shape));
    let soff: i64 = (0..n).map(|i| src_start[i] * ss[i]).sum();
    let doff: i64 = (0..n).map(|i| dst_start[i] * ds[i]).sum();
    let (soff, doff) = (soff as usize * itemsize, doff as usize * itemsize);
    reshape::copy_box(&src[soff..], &ss, &mut dst[doff..], &ds, &shape, itemsize);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_copy_between_padded_buffers() {
        // 2-byte items: a 2 x 3 box at (1, 1) of a 4 x 5 source, to (0, 2) of a 3 x 6 destination.
        let src: Vec<u8> = (0..40u8).collect();
        let mut dst = vec![0xFFu8; 36];
        copy_buffer(2, &src, &[4, 5], &[1, 1], &[3, 4], &mut dst, &[3, 6], &[0, 2]).unwrap();
        for r in 0..3 {
            for c in 0..6 {
                let got = &dst[(r * 6 + c) * 2..(r * 6 + c) * 2 + 2];
                if r < 2 && (2..5).contains(&c) {
                    let s = ((r + 1) * 5 + (c - 2 + 1)) * 2;
                    assert_eq!(got, &src[s..s + 2], "({r}, {c})");
                } else {
                    assert_eq!(got, &[0xFF, 0xFF], "({r}, {c})");
                }
            }
        }
        // 0-dim: one item; empty boxes copy nothing.
        let mut one = [0u8; 3];
        copy_buffer(3, &[7, 8, 9], &[], &[], &[], &mut one, &[], &[]).unwrap();
        assert_eq!(one, [7, 8, 9]);
        let mut d = [1u8; 4];
        copy_buffer(1, &[5; 4], &[4], &[2], &[2], &mut d, &[4], &[4]).unwrap();
        assert_eq!(d, [1; 4]);
    }

    #[test]
    fn bad_boxes_are_refused_and_write_nothing() {
        let src = [1u8; 16];
        let mut dst = [0u8; 16];
        // Source shape, start, stop; destination shape, start.
        type Case<'a> = (&'a [i64], &'a [i64], &'a [i64], &'a [i64], &'a [i64]);
        let bad: &[Case<'_>] = &[
            (&[4, 4], &[0, 0], &[5, 4], &[4, 4], &[0, 0]),  // stop past the source
            (&[4, 4], &[2, 0], &[1, 4], &[4, 4], &[0, 0]),  // start > stop
            (&[4, 4], &[0, 0], &[2, 2], &[4, 4], &[3, 0]),  // past the destination
            (&[4, 4], &[0, 0], &[2, 2], &[4, 4], &[-1, 0]), // negative
            (&[5, 4], &[0, 0], &[1, 1], &[4, 4], &[0, 0]),  // source buffer too small
            (&[4, 4], &[0, 0], &[1, 1], &[4, 5], &[0, 0]),  // destination buffer too small
            (&[4, 4], &[0], &[1, 1], &[4, 4], &[0, 0]),     // lengths differ
            (&[-4, 4], &[0, 0], &[0, 0], &[4, 4], &[0, 0]), // negative shape
        ];
        for (sp, ss, st, dp, ds) in bad {
            let e = copy_buffer(1, &src, sp, ss, st, &mut dst, dp, ds).unwrap_err();
            assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument, "{sp:?} {ss:?} {st:?} {dp:?} {ds:?}");
            assert_eq!(dst, [0; 16]);
        }
        assert!(copy_buffer(0, &src, &[4], &[0], &[1], &mut dst, &[4], &[0]).is_err());
    }
}
