//! Joining arrays along an axis: into a new array ([`Array::concatenate`])
//! or in place ([`Array::append_array`]).

use super::create::{kept_axes, padded_axes};
use super::{Array, StorageParams};
use crate::context::Context;
#[cfg(doc)]
use crate::error::Error;
use crate::error::{invalid, Result};
use crate::geometry::Geometry;
use crate::reshape::{AxisMap, Mapping, Source};
use crate::store::{overlap, overlap_error, Overlap};

impl Array {
    /// A new array holding this array followed by `other` along `axis`,
    /// with the partitions, location and metalayers of `storage`,
    /// compressed with `ctx`'s parameters. The shapes must agree on every
    /// other axis; chunk boundaries need not align. The new array keeps this
    /// array's dtype, user metalayers (those in `storage` added or replacing
    /// them) and vlmetalayers. Where the partitions and compression are
    /// this array's and a chunk holds only its items, the compressed chunk
    /// is copied as it is. `other` is read whole into memory.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if either array is 0-dim, `axis` is not an
    /// axis, the item sizes or dtypes differ, the shapes differ off `axis`,
    /// or the partitions are invalid; [`Error::InvalidStorage`] if the path
    /// is either array's own (however spelt), lies inside or holds one, or
    /// is taken by something that is not an array; [`Error::Blosc`] if
    /// writing fails (nothing is left behind).
    pub fn concatenate(&self, ctx: &Context, other: &Array, axis: i64, storage: &StorageParams) -> Result<Array> {
        let (a, shape) = self.concat_shape(other, axis)?;
        let geom = Geometry::new(self.itemsize(), &shape, &storage.chunkshape, &storage.blockshape)?;
        let st = storage.storage();
        if let Some(target) = st.urlpath.as_deref() {
            for own in [self.store.storage().urlpath, other.store.storage().urlpath].into_iter().flatten() {
                if let Some(o) = overlap(target, &own).or_else(|| (target == own).then_some(Overlap::Same)) {
                    return Err(overlap_error(target, o));
                }
            }
        }
        let buf = other.to_vec()?;
        let axes = (0..self.ndim())
            .map(|i| {
                if i == a {
                    AxisMap::insert(self.shape()[a], self.shape()[a], other.shape()[a], Source::Buffer(0))
                } else {
                    AxisMap::slice(0, shape[i])
                }
            })
            .collect();
        let m = Mapping {
            old_geom: &self.geom,
            old: &self.store,
            axes: padded_axes(axes),
            kept: kept_axes(&(0..self.ndim()).collect::<Vec<_>>()),
            buffer: Some((&buf, other.shape().to_vec())),
        };
        let mut metas = self.user_metalayers();
        for md in &storage.metalayers {
            match metas.iter_mut().find(|o| o.name == md.name) {
                Some(o) => o.content.clone_from(&md.content),
                None => metas.push(md.clone()),
            }
        }
        let vl = self.vlmetalayers()?;
        self.build_mapped(ctx, geom, &st, &metas, &m, &vl)
    }

    /// Concatenate in place: append `other`'s items at the end of `axis`
    /// (as [`Array::append`] does with a buffer), in any storage. The
    /// shapes must agree off `axis`; `other` is read whole into memory and
    /// the change is one transaction (all or nothing).
    ///
    /// # Errors
    /// As [`Array::concatenate`] for the arguments; as [`Array::append`]
    /// otherwise. The array is unchanged.
    pub fn append_array(&mut self, other: &Array, axis: i64) -> Result<()> {
        let (a, shape) = self.concat_shape(other, axis)?;
        let buf = other.to_vec()?;
        if buf.is_empty() {
            // No items, but the axis may still grow (another axis is empty).
            self.resize(&shape, None)
        } else {
            self.append(&buf, a as i64)
        }
    }

    /// The axis and the shape of `self` and `other` concatenated along `axis`.
    fn concat_shape(&self, other: &Array, axis: i64) -> Result<(usize, Vec<i64>)> {
        let n = self.ndim();
        if n == 0 || other.ndim() == 0 {
            invalid!("0-dim arrays cannot be concatenated");
        }
        if other.ndim() != n {
            invalid!("cannot concatenate an array of {} axes to one of {n}", other.ndim());
        }
        let a = match usize::try_from(axis) {
            Ok(a) if a < n => a,
            _ => invalid!("axis {axis} is not in 0..{n}"),
        };
        if other.itemsize() != self.itemsize() {
            invalid!("items of {} bytes cannot join items of {} bytes", other.itemsize(), self.itemsize());
        }
        if let (Some(x), Some(y)) = (self.dtype(), other.dtype()) {
            if x != y {
                invalid!("dtypes differ: '{x}' and '{y}'");
            }
        }
        if let Some(i) = (0..n).find(|&i| i != a && self.shape()[i] != other.shape()[i]) {
            invalid!(
                "shapes {:?} and {:?} differ on axis {i}, not only on the concatenation axis {a}",
                self.shape(),
                other.shape()
            );
        }
        let mut shape = self.shape().to_vec();
        shape[a] = shape[a].checked_add(other.shape()[a]).ok_or_else(|| {
            crate::error::Error::InvalidArgument(format!("axis {a} would be longer than {}", i64::MAX))
        })?;
        Ok((a, shape))
    }
}
