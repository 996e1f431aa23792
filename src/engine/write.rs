//! Writes: compressed chunks built in parallel from the caller's buffer,
//! chunks partly written patched block by block, and the buffers of stored
//! chunks reused for the next ones ([`Spares`]).

use super::copy::{copy_block, Dir, UserBuf};
use super::plan::check_user_buffer;
use super::tasks::{run_tasks, write_split, Split};
use crate::blosc2;
use crate::blosc2::{Compression, DCtx};
use crate::buffer::{sized, zeroed};
use crate::context::{kept, Codecs, Context, Worker};
use crate::error::Result;
use crate::geometry::{BlockPart, ChunkPart, Geometry, Region};
use crate::store::Store;

impl Codecs {
    /// [`Codecs::compress`] into a buffer from `spares`, if any.
    fn compress_reusing(
        &mut self,
        comp: &Compression,
        geom: &Geometry,
        chunk: &[u8],
        nthreads: usize,
        spares: Option<&Spares>,
    ) -> Result<Vec<u8>> {
        let out = spares.map(Spares::take).unwrap_or_default();
        self.cctx(comp, geom, nthreads)?.compress_into(chunk, out)
    }
}

/// Build the compressed chunks for writing `src` (shape `src_shape`) into
/// `region`: chunks the region covers are built from `src` alone, the others
/// are read from `sc` and patched. Returns `(nchunk, compressed)` in order.
///
/// With `spares`, chunks are compressed into the buffers of chunks already
/// stored ([`Spares`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_chunks(
    ctx: &Context,
    sc: Option<&Store>,
    geom: &Geometry,
    region: &Region,
    parts: &[ChunkPart],
    src: &[u8],
    src_shape: &[i64],
    spares: Option<&Spares>,
) -> Result<Vec<(i64, Vec<u8>)>> {
    check_user_buffer(geom, region, src_shape, src.len())?;
    // The copy routine takes a *mut for both directions; in Write direction
    // it only reads through it.
    let user = UserBuf::new(src, geom, src_shape);
    // Chunks patched block by block ([`patch_blocks`]) compress one block
    // at a time: Blosc's threads have nothing to share there.
    let patched = sc.is_some() && parts.iter().any(|p| !p.covers_chunk);
    let _section = match sc {
        Some(s) if patched => Some(s.read_section()?),
        _ => None,
    };
    let split = if patched {
        Split { lanes: ctx.nthreads().min(parts.len()).max(1), blosc: 1 }
    } else {
        write_split(ctx, geom, parts.len())
    };
    let nthreads = split.blosc;
    let work = |w: &mut Worker, part: &ChunkPart| -> Result<(i64, Vec<u8>)> {
        let Worker { codecs, bufs } = w;
        if let Some(sc) = sc.filter(|_| !part.covers_chunk) {
            if let Some(c) = patch_blocks(codecs, &mut bufs.block, sc, ctx.compression(), geom, region, part, user)? {
                return Ok((part.nchunk, c));
            }
        }
        let scratch = &mut bufs.scratch;
        match sc {
            Some(sc) if !part.covers_chunk => codecs.load(scratch, sc, geom, part.nchunk, None, nthreads)?,
            // Every byte of a chunk the write fills is overwritten.
            _ if geom.fills_chunk(part) => sized(scratch, geom.chunk_nbytes())?,
            _ => zeroed(scratch, geom.chunk_nbytes())?,
        }
        geom.for_each_block_in(part, |b| {
            // SAFETY: Dir::Write only reads the user buffer (borrowed
            // immutably for the call; every address checked by `at`).
            unsafe { copy_block(geom, region, part, &b, scratch, user, Dir::Write) };
        });
        Ok((part.nchunk, codecs.compress_reusing(ctx.compression(), geom, scratch, nthreads, spares)?))
    };
    run_tasks(ctx, parts, split, work)
}

/// The buffers of compressed chunks that an operation has stored, for its
/// next chunks to be compressed into ([`build_chunks`]): a write of many
/// chunks then touches the pages of a few batches of them, not fresh ones
/// for every chunk (a fresh page costs a fault and its zeroing). Dropped
/// with the operation.
#[derive(Default)]
pub(crate) struct Spares(std::sync::Mutex<Vec<Vec<u8>>>);

impl Spares {
    /// A buffer (empty, possibly with room), or a new one.
    fn take(&self) -> Vec<u8> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop().unwrap_or_default()
    }

    /// Keep `bufs` for later chunks.
    pub(crate) fn give(&self, bufs: impl IntoIterator<Item = Vec<u8>>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).extend(bufs);
    }
}

/// Chunk `part.nchunk` of `sc` with the items of `part` written from
/// `user`, recompressing only the blocks the region touches and keeping
/// the others' compressed streams ([`blosc2::splice`]): a plane across a
/// chunk of 4 block layers recompresses a quarter of it. `Ok(None)` when
/// the chunk cannot be patched so (see [`blosc2::block_spans`]) or every
/// block is touched: the caller rebuilds the whole chunk then.
///
/// # Errors
/// As reading, decompressing and compressing a chunk.
#[allow(clippy::too_many_arguments)]
fn patch_blocks(
    codecs: &mut Codecs,
    block: &mut Vec<u8>,
    sc: &Store,
    comp: &Compression,
    geom: &Geometry,
    region: &Region,
    part: &ChunkPart,
    user: UserBuf,
) -> Result<Option<Vec<u8>>> {
    let chunk = sc.chunk(part.nchunk)?;
    let Some(spans) = blosc2::block_spans(chunk.bytes(), geom.chunk_nbytes(), geom.block_nbytes())? else {
        return Ok(None);
    };
    let mut touched = Vec::new();
    geom.for_each_block_in(part, |b| touched.push(b));
    if touched.len() >= spans.len() {
        return Ok(None);
    }
    let bshape = geom.blockshape_full();
    let mut new: Vec<Option<Vec<u8>>> = vec![None; spans.len()];
    for b in touched {
        if block.len() != geom.block_nbytes() {
            zeroed(block, geom.block_nbytes())?;
        }
        let whole = (0..geom.dims()).all(|i| b.start[i] == 0 && b.stop[i] == i64::from(bshape[i]));
        if whole {
            // Every item is overwritten: nothing to decompress.
            block.fill(0);
        } else {
            kept(&mut codecs.dctx, 1, || DCtx::new(1))?.decompress_block(&chunk, b.nblock as usize, block)?;
        }
        let local = BlockPart { nblock: 0, ..b.clone() };
        // SAFETY: Dir::Write only reads the user buffer (every address
        // checked by `at`), which the caller lends for the call.
        unsafe { copy_block(geom, region, part, &local, block, user, Dir::Write) };
        new[b.nblock as usize] = Some(codecs.compress(comp, geom, block, 1)?);
    }
    Ok(blosc2::splice(chunk.bytes(), &spans, &new))
}
