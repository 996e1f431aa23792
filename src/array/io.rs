//! Reading and writing regions and orthogonal selections.

use super::Array;
use crate::buffer;
use crate::engine;
use crate::error::Result;

impl Array {
    /// Copy the whole array into `buffer` (C order).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] if `buffer` is too small;
    /// [`crate::Error::Blosc`] or [`crate::Error::Corrupt`] if a chunk cannot be read.
    pub fn to_buffer(&self, buffer: &mut [u8]) -> Result<()> {
        let region = self.geom.full_region();
        engine::read_region(&self.ctx, &self.store, &self.geom, &region, buffer, self.geom.shape())
    }

    /// The whole array as a new C-order vector.
    ///
    /// # Errors
    /// As [`Array::to_buffer`].
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let len = usize::try_from(self.geom.nitems()).ok().and_then(|n| n.checked_mul(self.geom.itemsize()));
        let len = len.ok_or_else(|| crate::error::Error::InvalidArgument("the array does not fit in memory".into()))?;
        let mut v = Vec::new();
        buffer::zeroed(&mut v, len)?;
        self.to_buffer(&mut v)?;
        Ok(v)
    }

    /// Copy `array[start..stop]` into `buffer`, a C-order array of shape
    /// `buffershape` (each entry at least `stop - start`).
    ///
    /// # Errors
    /// [`crate::Error::InvalidArgument`] if the slice leaves the array or does
    /// not fit the buffer; as [`Array::to_buffer`] otherwise.
    pub fn get_slice_buffer(&self, start: &[i64], stop: &[i64], buffer: &mut [u8], buffershape: &[i64]) -> Result<()> {
        let region = self.geom.region(start, stop)?;
        engine::read_region(&self.ctx, &self.store, &self.geom, &region, buffer, buffershape)
    }

    /// Write `buffer`, a C-order array of shape `buffershape`, into
    /// `array[start..stop]` (the arguments in [`Array::get_slice_buffer`]'s
    /// order; C's `caterva_set_slice_buffer` takes the buffer first). Either every touched chunk is written or, on an
    /// error, none is.
    ///
    /// # Errors
    /// As [`Array::get_slice_buffer`].
    ///
    /// On an object store, where writers do not lock the array, the write
    /// is made on this handle's version and published only if nobody
    /// changed the array meanwhile; otherwise the handle is brought up to
    /// date and the write made again (for up to two minutes), so no
    /// writer's items are lost.
    pub fn set_slice_buffer(&mut self, start: &[i64], stop: &[i64], buffer: &[u8], buffershape: &[i64]) -> Result<()> {
        self.optimistically(|a| {
            let region = a.geom.region(start, stop)?;
            engine::check_user_buffer(&a.geom, &region, buffershape, buffer.len())?;
            let parts = engine::plan(&a.geom, &region)?;
            let built =
                engine::build_chunks(&a.ctx, Some(&a.store), &a.geom, &region, &parts, buffer, buffershape, None)?;
            a.store.write(|tx| tx.update_chunks(&built))
        })
    }

    /// Read the outer product of one index list per axis into `buffer`, a
    /// C-order array of shape `buffershape` (each entry at least the length
    /// of its list): item `(j0, j1, …)` receives `array[sel[0][j0], sel[1][j1], …]`.
    /// Lists may be unsorted and hold repeats. Only the chunks and blocks the
    /// selection touches are decompressed.
    ///
    /// # Errors
    /// [`crate::Error::InvalidIndex`] if an index leaves its axis;
    /// [`crate::Error::InvalidArgument`] if there is not one list per axis or
    /// the buffer cannot hold the selection; as [`Array::to_buffer`] otherwise.
    pub fn get_orthogonal_selection(&self, selection: &[&[i64]], buffer: &mut [u8], buffershape: &[i64]) -> Result<()> {
        let sel = engine::Selection::new(&self.geom, selection, false)?;
        engine::read_selection(&self.ctx, &self.store, &self.geom, &sel, buffer, buffershape)
    }

    /// Write `buffer` (as read by [`Array::get_orthogonal_selection`]) into
    /// the selected items. Where an index repeats, the last position given
    /// wins. Either every touched chunk is written or none is.
    ///
    /// # Errors
    /// As [`Array::get_orthogonal_selection`].
    pub fn set_orthogonal_selection(&mut self, selection: &[&[i64]], buffer: &[u8], buffershape: &[i64]) -> Result<()> {
        self.optimistically(|a| {
            let sel = engine::Selection::new(&a.geom, selection, true)?;
            let built = engine::build_selection(&a.ctx, &a.store, &a.geom, &sel, buffer, buffershape)?;
            a.store.write(|tx| tx.update_chunks(&built))
        })
    }
}
