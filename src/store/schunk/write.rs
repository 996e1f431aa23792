//! Changing a super-chunk's chunks: appends (many at once, in one pass
//! over the frame), updates, deletions, reordering and special chunks;
//! written only by the store's transaction.

use blosc2_sys as b;

use super::super::frame_check::Chunks;
use super::super::location::local::LocalObject;
use super::super::location::Object;
use super::super::{frame, frame_check, io};
use super::{contexts_for, writing, SChunk};
use crate::blosc2::{chunk_info, compress_offsets, free, inflate, raw_bytes, Special};
use crate::error::{Error, Result};

impl SChunk {
    /// Append a compressed chunk.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it (size mismatch, I/O).
    pub(in crate::store) fn append_chunk(&mut self, chunk: &[u8]) -> Result<()> {
        writing(|| {
            let before = self.nchunks();
            // SAFETY: chunk is a complete compressed chunk; copy=true so blosc2 copies it.
            let rc = unsafe { b::blosc2_schunk_append_chunk(self.as_ptr(), chunk.as_ptr().cast_mut(), true) };
            if rc != before + 1 {
                return Err(Error::blosc("appending a chunk", rc));
            }
            Ok(())
        })
    }

    /// Append compressed chunks, in order: as many [`SChunk::append_chunk`]
    /// calls would, in one pass over the frame. c-blosc2 rewrites a frame's
    /// whole offsets index, trailer and header at each append (and makes
    /// and drops contexts with threads to do so); here a frame-backed
    /// super-chunk gets its new chunks written after its data section (a
    /// sparse frame: into new chunk files), then one new offsets index, the
    /// trailer as it was and the header with the new sizes, and is then read
    /// back. Chunks of zeros, NaNs or uninitialised items are stored in the
    /// index alone, as c-blosc2 stores them.
    ///
    /// The first chunk of an empty super-chunk (which sets its chunk size),
    /// a super-chunk without a frame (where an append costs no more than
    /// storing the chunk) and chunks of another size than the super-chunk's
    /// go through c-blosc2's own append.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] for a chunk that is not a complete chunk;
    /// [`Error::Blosc`] if c-blosc2 refuses one or cannot read the frame
    /// back; [`Error::Io`] if the frame cannot be written. On an error some
    /// of the chunks may have been appended (in memory) or the frame on disk
    /// may be part-written: the caller's journal rolls that back.
    pub(in crate::store) fn append_chunks(&mut self, chunks: &[&[u8]]) -> Result<()> {
        let mut rest = chunks;
        if self.nchunks() == 0 {
            let Some((first, tail)) = rest.split_first() else { return Ok(()) };
            self.append_chunk(first)?;
            rest = tail;
        }
        let mut stored = Vec::with_capacity(rest.len());
        let mut nbytes = 0i64;
        for c in rest {
            let info = chunk_info(c)?;
            if info.nbytes != usize::try_from(self.chunksize()).unwrap_or(0) {
                stored.clear();
                break;
            }
            nbytes += info.nbytes as i64;
            stored.push(&c[..info.cbytes]);
        }
        // A frame elsewhere than on a local disk (through a stand-in) is
        // written by c-blosc2 into its draft, chunk by chunk.
        let remote = super::super::blosc_io::stand_in_url(self.io_params()).is_some();
        if rest.is_empty() || stored.len() != rest.len() || self.raw().frame.is_null() || self.borrowed || remote {
            return rest.iter().try_for_each(|c| self.append_chunk(c));
        }
        let offsets = self.frame_offsets()?;
        let st = self.storage();
        let mut next = match st.urlpath.as_deref() {
            None => self.append_in_memory(&offsets, &stored, nbytes)?,
            Some(url) => {
                writing(|| append_on_disk(url, st.contiguous, &offsets, &stored, nbytes))?;
                Self::open(url, Chunks::Later)?
            }
        };
        next.carry_settings(self);
        *self = next;
        Ok(())
    }

    /// [`SChunk::append_chunks`] on a frame in memory: the frame's buffer
    /// grown in place (`realloc`, as c-blosc2 grows it: no copy of the data
    /// section when the allocator can extend it) and handed to a new
    /// super-chunk, which is returned. This one must then be dropped
    /// (without it, its frame is gone); on an error it is left as it was.
    pub(super) fn append_in_memory(&mut self, offsets: &[i64], chunks: &[&[u8]], nbytes: i64) -> Result<SChunk> {
        let (p, len, needs_free) = self.to_cframe_raw()?;
        if needs_free {
            // SAFETY: a copy c-blosc2 allocated for us (not expected for a contiguous frame in memory).
            unsafe { free(p.cast()) };
            return Err(Error::blosc("growing a frame in memory that the super-chunk does not hold", None));
        }
        let len = len as usize;
        // SAFETY: the super-chunk's own frame: len bytes, alive while self is.
        let old = unsafe { raw_bytes(p, len) };
        let tail = &old[len.saturating_sub(frame::TRAILER_TAIL)..];
        let s = frame::Sections::read(old, tail, len as u64).ok_or_else(|| unreadable(None))?;
        let plan = frame::plan_append(offsets, false, s.cbytes, chunks);
        let index = compress_offsets(&plan.offsets)?;
        let data_end = (s.header_len + s.cbytes as u64) as usize;
        let trailer = old[s.trailer_at as usize..].to_vec();
        // What the append overwrites, to put back if the result cannot be read.
        let (old_tail, old_head) = (old[data_end..].to_vec(), old[..frame::HEADER_MINLEN].to_vec());
        let new_len = data_end + plan.cbytes as usize + index.len() + trailer.len();
        // SAFETY: the frame's buffer is malloc'ed by c-blosc2 (or by from_cframe) and owned by the super-chunk,
        // which from now on does not free it; realloc keeps it valid when it fails.
        let q = unsafe {
            b::blosc2_schunk_avoid_cframe_free(self.as_ptr(), true);
            let q = libc::realloc(p.cast(), new_len).cast::<u8>();
            if q.is_null() {
                b::blosc2_schunk_avoid_cframe_free(self.as_ptr(), false);
                return Err(Error::blosc(format!("allocating {new_len} bytes for the frame"), None));
            }
            q
        };
        // SAFETY: q holds new_len bytes, the first len of them the old frame's; nothing else refers to them
        // (self's frame pointer is stale now and never read again: self is dropped or replaced below).
        let buf = unsafe { std::slice::from_raw_parts_mut(q, new_len) };
        let mut at = data_end;
        for &(i, _) in &plan.stored {
            buf[at..at + chunks[i].len()].copy_from_slice(chunks[i]);
            at += chunks[i].len();
        }
        buf[at..at + index.len()].copy_from_slice(&index);
        buf[at + index.len()..].copy_from_slice(&trailer);
        frame::patch_header(
            &mut buf[..s.header_len as usize],
            new_len as u64,
            s.nbytes + nbytes,
            s.cbytes + plan.cbytes,
        );
        // SAFETY: q is a malloc'ed buffer of new_len bytes that nothing else owns.
        match unsafe { Self::own_frame(q, new_len, true) } {
            Ok(sc) => Ok(sc),
            Err(e) => {
                // Put the old frame back and read it again in place of self.
                buf[data_end..len].copy_from_slice(&old_tail);
                buf[..frame::HEADER_MINLEN].copy_from_slice(&old_head);
                // SAFETY: as above; a failed shrink leaves q (larger than len) valid.
                let back = unsafe {
                    let r = libc::realloc(q.cast(), len).cast::<u8>();
                    Self::own_frame(if r.is_null() { q } else { r }, len, false)
                };
                match back {
                    Ok(mut back) => {
                        back.carry_settings(self);
                        *self = back;
                        Err(e)
                    }
                    // The frame that was sound a moment ago: nothing left to hold the array.
                    Err(_) => std::process::abort(),
                }
            }
        }
    }

    /// A super-chunk over the malloc'ed contiguous frame `p` of `len` bytes,
    /// which it then owns (and frees), checked with [`frame_check`] first
    /// when `check` says so.
    ///
    /// # Safety
    /// `p` is a `malloc`'ed buffer of `len` initialised bytes that nothing else owns or uses.
    unsafe fn own_frame(p: *mut u8, len: usize, check: bool) -> Result<Self> {
        if check {
            // SAFETY: as the caller guarantees.
            frame_check::check_cframe(unsafe { raw_bytes(p, len) }, inflate)?;
        }
        // SAFETY: as the caller guarantees; with copy = false blosc2 reads the buffer in place.
        let sc =
            Self::own_made(unsafe { b::blosc2_schunk_from_buffer(p, len as i64, false) }, "reading the frame buffer")?;
        // SAFETY: sc is frame-backed by p, which it now owns and frees.
        unsafe { b::blosc2_schunk_avoid_cframe_free(sc.ptr.as_ptr(), false) };
        Ok(sc)
    }

    /// Give this super-chunk (just read back from a frame) the compression
    /// and decompression settings of `old` that a frame does not record
    /// (threads, a C caller's prefilter), with new contexts made from them.
    pub(super) fn carry_settings(&mut self, old: &SChunk) {
        let sc = self.ptr.as_ptr();
        // SAFETY: both super-chunks are live; their storages' parameter blocks are c-blosc2's own copies,
        // which it reads when it makes contexts. The contexts replaced were made by this process (the
        // super-chunk is new) and nothing else refers to them.
        unsafe {
            let (from, to) = (old.raw().storage, (*sc).storage);
            if from.is_null() || to.is_null() || (*from).cparams.is_null() || (*to).cparams.is_null() {
                return;
            }
            if (*from).dparams.is_null() || (*to).dparams.is_null() {
                return;
            }
            let mut cp = *(*to).cparams;
            cp.nthreads = (*(*from).cparams).nthreads;
            cp.prefilter = (*(*from).cparams).prefilter;
            cp.preparams = (*(*from).cparams).preparams;
            cp.schunk = sc.cast();
            let mut dp = *(*to).dparams;
            dp.nthreads = (*(*from).dparams).nthreads;
            dp.schunk = sc.cast();
            let Some((cctx, dctx)) = contexts_for(sc, cp, dp) else { return };
            *(*to).cparams = cp;
            *(*to).dparams = dp;
            for c in [(*sc).cctx, (*sc).dctx] {
                if !c.is_null() {
                    b::blosc2_free_ctx(c);
                }
            }
            (*sc).cctx = cctx;
            (*sc).dctx = dctx;
        }
    }

    /// Replace chunk `n`.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(in crate::store) fn update_chunk(&mut self, n: i64, chunk: &[u8]) -> Result<()> {
        writing(|| {
            // SAFETY: chunk is a complete compressed chunk; copy=true so blosc2 copies it.
            let rc = unsafe { b::blosc2_schunk_update_chunk(self.as_ptr(), n, chunk.as_ptr().cast_mut(), true) };
            if rc < 0 {
                return Err(Error::blosc(format!("updating chunk {n}"), rc));
            }
            Ok(())
        })
    }

    /// Remove chunk `n`; the chunks after it move down by one.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(in crate::store) fn delete_chunk(&mut self, n: i64) -> Result<()> {
        writing(|| {
            if n < 0 || n >= self.nchunks() {
                return Err(Error::InvalidArgument(format!("chunk {n} out of range")));
            }
            // SAFETY: valid super-chunk and chunk index.
            let rc = unsafe { b::blosc2_schunk_delete_chunk(self.as_ptr(), n) };
            if rc < 0 {
                return Err(Error::blosc(format!("deleting chunk {n}"), rc));
            }
            Ok(())
        })
    }

    /// Permute the chunks without touching their data: chunk `i` becomes the
    /// one that was at `order[i]` (a permutation, checked by the caller).
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses it.
    pub(in crate::store) fn reorder(&mut self, order: &[i64]) -> Result<()> {
        writing(|| {
            let mut order = order.to_vec();
            // SAFETY: valid super-chunk; order holds nchunks entries (checked by the caller).
            let rc = unsafe { b::blosc2_schunk_reorder_offsets(self.as_ptr(), order.as_mut_ptr()) };
            if rc < 0 {
                return Err(Error::blosc("reordering chunks", i64::from(rc)));
            }
            Ok(())
        })
    }

    /// Fill an empty super-chunk with `nchunks` special chunks of `chunk_nbytes` bytes.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 refuses (too many chunks, I/O).
    pub(in crate::store) fn fill_special(&mut self, nchunks: i64, chunk_nbytes: usize, kind: Special) -> Result<()> {
        writing(|| {
            let typesize = self.typesize().max(1) as i64;
            let nitems = nchunks
                .checked_mul(chunk_nbytes as i64 / typesize)
                .ok_or_else(|| Error::InvalidArgument("too many items".into()))?;
            let value = match kind {
                Special::Zeros => b::BLOSC2_SPECIAL_ZERO,
                Special::Uninit => b::BLOSC2_SPECIAL_UNINIT,
                Special::Nan => b::BLOSC2_SPECIAL_NAN,
            } as i32;
            // SAFETY: valid, empty super-chunk.
            let rc = unsafe { b::blosc2_schunk_fill_special(self.as_ptr(), nitems, value, chunk_nbytes as i32) };
            if rc < 0 || self.nchunks() != nchunks {
                return Err(Error::blosc("filling with special chunks", rc));
            }
            Ok(())
        })
    }
}

/// The error for a frame whose sections cannot be found where c-blosc2 put them.
fn unreadable(path: Option<&str>) -> Error {
    Error::InvalidFormat(format!(
        "{}: the header or trailer is not where c-blosc2 writes them",
        path.map_or_else(|| "the frame in memory".to_owned(), |p| format!("'{p}'"))
    ))
}

/// [`SChunk::append_chunks`] on a frame on disk (`url`, a file or a sparse
/// frame's directory), through [`io`]: the new chunks after the data
/// section (into new chunk files), the new offsets index, the old trailer,
/// the file cut to its new length, then the header with the new sizes.
fn append_on_disk(url: &str, contiguous: bool, offsets: &[i64], chunks: &[&[u8]], nbytes: i64) -> Result<()> {
    let dir = std::path::Path::new(url);
    let path = if contiguous { dir.to_path_buf() } else { dir.join(frame::SPARSE_INDEX) };
    let io_err = |what: &'static str, p: &std::path::Path| {
        let p = p.to_path_buf();
        move |e: std::io::Error| Error::io(what, Some(&p), &e)
    };
    let f = io::OpenOptions::write().open(&path).map_err(io_err("opening", &path))?;
    let len = f.std().metadata().map_err(io_err("reading", &path))?.len();
    let rf = LocalObject::open(&path).map_err(io_err("opening", &path))?;
    let head = rf.read_vec(0, len.min(frame::HEADER_MINLEN as u64) as usize).map_err(io_err("reading", &path))?;
    let tail = rf
        .read_vec(len.saturating_sub(frame::TRAILER_TAIL as u64), frame::TRAILER_TAIL.min(len as usize))
        .map_err(io_err("reading", &path))?;
    let s = frame::Sections::read(&head, &tail, len).ok_or_else(|| unreadable(Some(url)))?;
    let mut header = rf.read_vec(0, s.header_len as usize).map_err(io_err("reading", &path))?;
    let trailer = rf.read_vec(s.trailer_at, (len - s.trailer_at) as usize).map_err(io_err("reading", &path))?;
    let plan = frame::plan_append(offsets, !contiguous, s.cbytes, chunks);
    let index = compress_offsets(&plan.offsets)?;
    let mut at = s.header_len;
    if contiguous {
        // The chunks one after the other, written in pieces of a few MiB.
        at += s.cbytes as u64;
        let mut buf = Vec::new();
        for &(i, _) in &plan.stored {
            buf.extend_from_slice(chunks[i]);
            if buf.len() >= 4 << 20 {
                f.write_all_at(at, &buf).map_err(io_err("writing", &path))?;
                at += buf.len() as u64;
                buf.clear();
            }
        }
        f.write_all_at(at, &buf).map_err(io_err("writing", &path))?;
        at += buf.len() as u64;
    } else {
        for &(i, id) in &plan.stored {
            let p = frame::chunk_file(dir, id);
            let c = io::OpenOptions::truncate().open(&p).map_err(io_err("creating", &p))?;
            c.write_all_at(0, chunks[i]).map_err(io_err("writing", &p))?;
        }
    }
    f.write_all_at(at, &index).map_err(io_err("writing", &path))?;
    at += index.len() as u64;
    f.write_all_at(at, &trailer).map_err(io_err("writing", &path))?;
    at += trailer.len() as u64;
    if at < len {
        f.set_len(at).map_err(io_err("truncating", &path))?;
    }
    frame::patch_header(&mut header, at, s.nbytes + nbytes, s.cbytes + plan.cbytes);
    f.write_all_at(0, &header).map_err(io_err("writing", &path))
}
