//! Arrays inside larger files: opening the frame at a byte offset of a
//! file ([`Array::open_offset`], read-only) and appending an array's frame
//! to a file ([`Array::save_append`]); the store side is `store/offset.rs`.

use super::Array;
use crate::context::Context;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::store::Store;

impl Array {
    /// Open, read-only, the array whose contiguous frame starts at byte
    /// `offset` of the file `urlpath` (as `b2nd_open_offset` does): one of
    /// several arrays saved into one file with [`Array::save_append`], or a
    /// frame embedded in another format. The frame is checked like any
    /// other before c-blosc2 reads it; its chunks are read from the file as
    /// needed.
    ///
    /// Writes to the array ([`Array::set_slice_buffer`], reshapes,
    /// metalayer updates…) are refused with [`Error::InvalidStorage`]:
    /// c-blosc2 writes a changed frame past its end, where the file's next
    /// frame lies, and the journal and the lock protect whole files. Copy it
    /// ([`Array::copy`], [`Array::save`] to another path) to change it.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a negative offset;
    /// [`Error::InvalidStorage`] if nothing is at `urlpath` or it is not a
    /// regular file; [`Error::InvalidFormat`] if no sound frame starts at
    /// `offset` or fits in the file, or its metalayers do not describe an
    /// array; as [`Array::open`] otherwise.
    pub fn open_offset(ctx: &Context, urlpath: &str, offset: i64) -> Result<Array> {
        Self::wrap(ctx, Store::open_offset(urlpath, offset)?)
    }

    /// Where the array's frame starts in its file, for an array opened with
    /// [`Array::open_offset`] (`None` otherwise).
    #[must_use]
    pub fn frame_offset(&self) -> Option<i64> {
        self.store.offset().and_then(|o| i64::try_from(o).ok())
    }

    /// Append the array, as a contiguous frame, to the end of the file
    /// `urlpath` (created if missing) and return the byte offset where its
    /// frame starts (as `b2nd_save_append` does): open it again with
    /// [`Array::open_offset`], or with python-blosc2's
    /// `blosc2.open(urlpath, offset=...)`. Many arrays can share one file
    /// this way. The file is synced; a failure cuts it back to its old
    /// length (or removes it if this call created it). A process killed
    /// mid-append may leave part of a frame after the file's old end;
    /// the bytes before it are never written.
    ///
    /// The file may hold anything before; if it is an array's frame file,
    /// that array becomes one of the file's frames: its handles refuse to
    /// write from then on, and it opens with [`Array::open_offset`] at 0.
    ///
    /// # Errors
    /// [`Error::InvalidStorage`] if `urlpath` is empty, a directory or a
    /// symbolic link, or another handle is writing it; [`Error::Io`] if
    /// writing fails; [`Error::Blosc`] if the frame cannot be made.
    pub fn save_append(&self, urlpath: &str) -> Result<i64> {
        self.store.append_to_file(urlpath)
    }
}
