//! Compression and decompression contexts ([`CCtx`], [`DCtx`]) and
//! chunks: reading one's header ([`chunk_info`]), deciding whether this
//! build can decode it ([`check_decodable`]), decoding all of it or some
//! of its blocks, special chunks (zeros, NaNs, a repeated value), and
//! Blosc1-format buffers for the BLZ export.

use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::{Mutex, Once};

use blosc2_sys as b;

use super::base::{blosc2_version, blosc_err, init, MAX_OVERHEAD};
use super::cparams::Compression;
use crate::blosc2::chunk_header::{
    block_end, block_starts, ChunkHeader, CHUNK_MAX_TYPESIZE, HEADER_LEN, POS_BLOSC2_FLAGS,
};
use crate::codec;
use crate::error::{Error, Result};

pub(crate) fn dparams(nthreads: usize) -> b::blosc2_dparams {
    // SAFETY: returns a plain struct by value.
    let mut dp = unsafe { b::blosc2_get_blosc2_dparams_defaults() };
    dp.nthreads = nthreads.clamp(1, i16::MAX as usize) as i16;
    dp
}

/// A compression context (one per worker; not shared between threads).
pub(crate) struct CCtx(NonNull<b::blosc2_context>);

// SAFETY: a blosc2 context may move between threads; it is never shared.
unsafe impl Send for CCtx {}

impl CCtx {
    /// New context for chunks of `typesize`-byte items and `blocksize`-byte blocks.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 rejects the parameters.
    pub(crate) fn new(comp: &Compression, typesize: usize, blocksize: usize, nthreads: usize) -> Result<Self> {
        init();
        // SAFETY: the parameters are passed by value; a NULL return is handled.
        let p = unsafe { b::blosc2_create_cctx(comp.to_blosc(chunk_typesize(typesize), blocksize, nthreads)) };
        NonNull::new(p).map(CCtx).ok_or_else(|| Error::blosc("creating a compression context", None))
    }

    /// New context with c-blosc2's own parameters `cp` (those of a
    /// super-chunk's vlmetalayers, say).
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 rejects them.
    pub(crate) fn with_blosc_cparams(cp: b::blosc2_cparams) -> Result<Self> {
        init();
        // SAFETY: the parameters are passed by value; a NULL return is handled.
        let p = unsafe { b::blosc2_create_cctx(cp) };
        NonNull::new(p).map(CCtx).ok_or_else(|| Error::blosc("creating a compression context", None))
    }

    /// Compress `src` into a new chunk.
    ///
    /// # Errors
    /// [`Error::Blosc`] if compression fails (bad codec, filter…).
    pub(crate) fn compress(&mut self, src: &[u8]) -> Result<Vec<u8>> {
        self.compress_into(src, Vec::new())
    }

    /// [`CCtx::compress`] into `out` (emptied first), whose allocation is
    /// reused when it is large enough: a buffer that held a chunk already
    /// stored costs no fresh pages.
    pub(crate) fn compress_into(&mut self, src: &[u8], mut out: Vec<u8>) -> Result<Vec<u8>> {
        let cap = src.len() + MAX_OVERHEAD;
        out.clear();
        if out.capacity() < cap {
            out = Vec::with_capacity(cap);
        }
        // SAFETY: src is valid for src.len() bytes, out has cap writable bytes;
        // blosc2 writes at most destsize bytes and returns how many.
        let rc = unsafe {
            b::blosc2_compress_ctx(
                self.0.as_ptr(),
                src.as_ptr().cast(),
                src.len() as i32,
                out.as_mut_ptr().cast(),
                cap as i32,
            )
        };
        if rc <= 0 {
            return Err(blosc_err("compression", i64::from(rc)));
        }
        // SAFETY: blosc2 initialised the first rc bytes.
        unsafe { out.set_len(rc as usize) };
        drop_stale_dict_flag(&mut out);
        Ok(out)
    }
}

/// Clear the dictionary flag of a chunk that holds no dictionary. With
/// `use_dict`, c-blosc2 2.15 falls back to a plain copy for data it cannot
/// compress (or writes a special chunk) and leaves the flag set: c-blosc2
/// 3.x (python-blosc2) then looks for a dictionary in the copied bytes and
/// fails, and our frame check refuses the chunk as one with an invalid
/// dictionary. Without the flag the chunk is what it is, a copy.
pub(crate) fn drop_stale_dict_flag(chunk: &mut [u8]) {
    let Some(h) = chunk.get(..HEADER_LEN).and_then(ChunkHeader::parse) else {
        return;
    };
    if h.is_extended() && (h.memcpyed() || h.special() != 0) && h.dict() {
        chunk[POS_BLOSC2_FLAGS] = h.blosc2_flags & !(b::BLOSC2_USEDICT as u8);
    }
}

impl Drop for CCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context.
        unsafe { b::blosc2_free_ctx(self.0.as_ptr()) }
    }
}

/// A decompression context (one per worker; not shared between threads).
pub(crate) struct DCtx(NonNull<b::blosc2_context>);

// SAFETY: a blosc2 context may move between threads; it is never shared.
unsafe impl Send for DCtx {}

impl DCtx {
    /// New context using `nthreads` blosc threads.
    ///
    /// # Errors
    /// [`Error::Blosc`] if c-blosc2 cannot create it.
    pub(crate) fn new(nthreads: usize) -> Result<Self> {
        init();
        // SAFETY: the parameters are passed by value; a NULL return is handled.
        let p = unsafe { b::blosc2_create_dctx(dparams(nthreads)) };
        NonNull::new(p).map(DCtx).ok_or_else(|| Error::blosc("creating a decompression context", None))
    }

    /// Decompress `chunk` into `dst`, which must be exactly the chunk's
    /// uncompressed size. With `mask`, only blocks whose entry is `false` are
    /// decompressed (c-blosc2's maskout); `mask.len()` must be the chunk's
    /// block count.
    ///
    /// # Errors
    /// [`Error::Blosc`] on a corrupt chunk or a size mismatch;
    /// [`Error::Unsupported`] for a chunk [`check_decodable`] refuses.
    pub(crate) fn decompress(&mut self, chunk: &Chunk<'_>, dst: &mut [u8], mask: Option<&[bool]>) -> Result<()> {
        check_decodable(chunk.bytes())?;
        let info = chunk.info()?;
        if info.nbytes != dst.len() {
            return Err(Error::InvalidFormat(format!(
                "chunk holds {} bytes, the array geometry expects {}",
                info.nbytes,
                dst.len()
            )));
        }
        if let Some(value) = wide_value(chunk.bytes())? {
            let blocksize = info.blocksize.max(1);
            for (i, block) in dst.chunks_mut(blocksize).enumerate() {
                if mask.map_or(true, |m| !m.get(i).copied().unwrap_or(true)) {
                    fill_repeated(value, i * blocksize, block);
                }
            }
            return Ok(());
        }
        if let Some(mask) = mask {
            // SAFETY: mask is valid for mask.len() bools; blosc2 copies what it needs
            // (it only reads it during the next decompression).
            let rc = unsafe { b::blosc2_set_maskout(self.0.as_ptr(), mask.as_ptr().cast_mut(), mask.len() as i32) };
            if rc < 0 {
                return Err(blosc_err("setting the block mask", i64::from(rc)));
            }
        }
        // SAFETY: chunk.bytes() is a complete chunk (its header says cbytes <=
        // the slice), dst has exactly nbytes writable bytes.
        let rc = unsafe {
            b::blosc2_decompress_ctx(
                self.0.as_ptr(),
                chunk.bytes().as_ptr().cast(),
                chunk.bytes().len() as i32,
                dst.as_mut_ptr().cast(),
                dst.len() as i32,
            )
        };
        if rc < 0 {
            return Err(blosc_err("decompression", i64::from(rc)));
        }
        if let Some((typesize, group)) = grouped_shuffle(chunk.bytes())? {
            let blocksize = info.blocksize.max(1);
            let mut scratch = Vec::new();
            for (i, block) in dst.chunks_mut(blocksize).enumerate() {
                if mask.map_or(true, |m| !m.get(i).copied().unwrap_or(true)) {
                    regroup(block, typesize, group, &mut scratch);
                }
            }
        }
        Ok(())
    }
}

impl DCtx {
    /// Decompress block `nblock` of `chunk` into `dst` (one block long),
    /// reading only that block (`blosc2_getitem_ctx` decodes a whole,
    /// aligned block straight into `dst`). The chunk must pass
    /// [`Chunk::by_blocks`] for `dst.len()`.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the chunk header is damaged, the chunk
    /// cannot be read by blocks or the block is not in it;
    /// [`Error::Unsupported`] if [`check_decodable`] refuses it;
    /// [`Error::Blosc`] if it does not decompress.
    pub(crate) fn decompress_block(&mut self, chunk: &Chunk<'_>, nblock: usize, dst: &mut [u8]) -> Result<()> {
        check_decodable(chunk.bytes())?;
        if !chunk.by_blocks(dst.len())? || chunk.bytes().is_empty() {
            return Err(Error::InvalidFormat(format!("chunk cannot be read in blocks of {} bytes", dst.len())));
        }
        let bytes = chunk.bytes();
        let info = chunk.info()?;
        let typesize = usize::from(bytes[3]).max(1);
        let start = nblock.checked_mul(dst.len()).filter(|&s| s + dst.len() <= info.nbytes);
        let (Some(start), Ok(srcsize), Ok(dstsize)) = (start, i32::try_from(bytes.len()), i32::try_from(dst.len()))
        else {
            return Err(Error::InvalidFormat(format!("block {nblock} is not in a chunk of {} bytes", info.nbytes)));
        };
        if let Some(value) = wide_value(bytes)? {
            fill_repeated(value, start, dst);
            return Ok(());
        }
        let (first, n) = ((start / typesize) as i32, (dst.len() / typesize) as i32);
        // SAFETY: bytes is a complete chunk (its header says so: `info`),
        // dst has dstsize writable bytes and blosc2 writes at most that.
        let rc = unsafe {
            b::blosc2_getitem_ctx(
                self.0.as_ptr(),
                bytes.as_ptr().cast(),
                srcsize,
                first,
                n,
                dst.as_mut_ptr().cast(),
                dstsize,
            )
        };
        if rc < 0 {
            return Err(blosc_err("decompressing a block", i64::from(rc)));
        }
        if rc != dstsize {
            return Err(Error::InvalidFormat(format!("block {nblock} decompressed to {rc} bytes, not {dstsize}")));
        }
        if let Some((typesize, group)) = grouped_shuffle(bytes)? {
            regroup(dst, typesize, group, &mut Vec::new());
        }
        Ok(())
    }
}

impl Drop for DCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context.
        unsafe { b::blosc2_free_ctx(self.0.as_ptr()) }
    }
}

/// Decompress the complete Blosc (1 or 2) chunk `src` into `dst`, which
/// must be exactly its uncompressed size, with `nthreads` threads.
///
/// # Errors
/// [`Error::InvalidFormat`] if the header disagrees with `dst` or the
/// buffer; [`Error::Blosc`] if it does not decompress.
pub(crate) fn decompress_into(dctx: &mut DCtx, src: &[u8], dst: &mut [u8]) -> Result<()> {
    dctx.decompress(&Chunk::from_slice(src), dst, None)
}

/// The typesize chunks of `itemsize`-byte items are compressed with, and
/// record: the item size up to 255 bytes; beyond, the largest divisor of
/// the item that a chunk can record, so that shuffling still groups the
/// bytes of each field or character (a `<U100` item of 400 bytes: 200).
/// The super-chunk (the frame's header) records the whole item size, as
/// python-blosc2 writes it.
pub(crate) fn chunk_typesize(itemsize: usize) -> usize {
    if itemsize <= CHUNK_MAX_TYPESIZE {
        return itemsize.max(1);
    }
    (1..=CHUNK_MAX_TYPESIZE).rev().find(|d| itemsize % d == 0).unwrap_or(1)
}

/// Refuse, by name, a chunk that uses what the c-blosc2 we link cannot
/// decode: a codec or filter plugin (blosc2-sys builds c-blosc2 without
/// them), a dictionary with LZ4/LZ4HC (c-blosc2 3.x; 2.15 has dictionaries
/// for ZSTD only) or a chunk format newer than 2.15's (3.x's
/// variable-length blocks). c-blosc2 itself would fail on them with a bare
/// code (or, for an unknown id it ignores, give other bytes); naming the
/// feature tells the user what to convert. Special chunks (zeros, NaNs, a
/// repeated value, uninitialised) carry no codec and always decode.
///
/// # Errors
/// [`Error::Unsupported`] naming the feature.
pub(crate) fn check_decodable(bytes: &[u8]) -> Result<()> {
    let (Some(&version), Some(&flags)) = (bytes.first(), bytes.get(2)) else {
        return Ok(());
    };
    // `feature` names it in a few words (what `caterva verify` groups
    // chunks by), `what` in the sentence.
    let refuse = |feature: String, what: String| {
        Err(Error::unsupported(
            feature,
            format!("the chunk uses {what}, which c-blosc2 {} as built here cannot decode", blosc2_version()),
        ))
    };
    if version > b::BLOSC2_VERSION_FORMAT as u8 {
        let what = if version == 6 { " (variable-length blocks, c-blosc2 3.x)" } else { "" };
        let feature = format!("chunk format version {version}");
        return refuse(feature.clone(), format!("{feature}{what}"));
    }
    let extended = flags & 0x05 == 0x05;
    let Some(&flags2) = bytes.get(31).filter(|_| extended) else {
        return Ok(());
    };
    if (flags2 >> 4) & b::BLOSC2_SPECIAL_MASK as u8 != 0 {
        return Ok(());
    }
    let (Some(filters), Some(&udcodec)) = (bytes.get(16..22), bytes.get(22)) else {
        return Ok(());
    };
    if flags & b::BLOSC_MEMCPYED as u8 == 0 {
        let format = flags >> 5;
        let codec = if format == b::BLOSC_UDCODEC_FORMAT as u8 { udcodec } else { format };
        let known = [b::BLOSC_BLOSCLZ, b::BLOSC_LZ4, b::BLOSC_LZ4HC, b::BLOSC_ZLIB, b::BLOSC_ZSTD];
        let builtin = if format == b::BLOSC_UDCODEC_FORMAT as u8 {
            known.iter().any(|&k| u32::from(codec) == k)
        } else {
            // The format enumeration: BloscLZ, LZ4 (and LZ4HC), zlib, zstd.
            [0, 1, 3, 4].contains(&format)
        };
        if !builtin && !registered_codec(codec) {
            return match codec::plugin_name(codec) {
                Some(name) => refuse(format!("codec {name}"), format!("codec {name} (id {codec}, a c-blosc2 plugin)")),
                None => refuse(format!("codec id {codec}"), format!("codec id {codec}")),
            };
        }
        let lz4 = format == b::BLOSC_LZ4_FORMAT as u8
            || (format == b::BLOSC_UDCODEC_FORMAT as u8 && [b::BLOSC_LZ4, b::BLOSC_LZ4HC].contains(&u32::from(codec)));
        if lz4 && flags2 & b::BLOSC2_USEDICT as u8 != 0 {
            return refuse(
                "an LZ4/LZ4HC dictionary".into(),
                "a dictionary with codec LZ4/LZ4HC (use_dict, written by c-blosc2 3.x)".into(),
            );
        }
    }
    // Ids from 160 up are the caller's own filters (`blosc2_register_filter`):
    // c-blosc2 runs one registered in this process and fails cleanly on one
    // that is not ("not found"). Below that, c-blosc2's: the plugins it was
    // built without.
    let user = b::BLOSC2_USER_REGISTERED_FILTERS_START as u8;
    if let Some(&f) = filters.iter().find(|&&f| f > b::BLOSC_TRUNC_PREC as u8 && f < user) {
        return match codec::filter::plugin_name(f) {
            Some(name) => refuse(format!("filter {name}"), format!("filter {name} (id {f}, a c-blosc2 plugin)")),
            None => refuse(format!("filter id {f}"), format!("filter id {f}")),
        };
    }
    Ok(())
}

/// Whether codec id `codec` (a plugin id, 32 and up) is registered in this
/// process: a caller's own codec (`blosc2_register_codec`) decodes.
pub(crate) fn registered_codec(codec: u8) -> bool {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: name is a valid out-pointer; c-blosc2 only stores a static or
    // registry string into it.
    unsafe { b::blosc2_compcode_to_compname(i32::from(codec), &mut name) };
    codec >= b::BLOSC_LAST_CODEC as u8 && !name.is_null()
}

/// The value of a repeated-value special chunk whose items are wider than
/// a chunk header can say (more than 255 bytes): c-blosc2 3.x
/// (python-blosc2's `full` of such items) stores the whole value after the
/// header, gives the width by `cbytes` alone and writes a typesize of 1.
/// c-blosc2 2.15 repeats `typesize` bytes of it, other values: such chunks
/// are filled here ([`fill_repeated`]). `None` for any other chunk.
///
/// # Errors
/// [`Error::InvalidFormat`] if the value does not divide the chunk.
pub(crate) fn wide_value(bytes: &[u8]) -> Result<Option<&[u8]>> {
    let Some(h) = bytes.get(..HEADER_LEN).and_then(ChunkHeader::parse) else {
        return Ok(None);
    };
    if !h.is_extended() || u32::from(h.special()) != b::BLOSC2_SPECIAL_VALUE {
        return Ok(None);
    }
    let header = HEADER_LEN;
    let cbytes = usize::try_from(h.cbytes).unwrap_or(0);
    let width = cbytes.saturating_sub(header);
    if width <= usize::from(h.typesize) {
        return Ok(None);
    }
    let nbytes = chunk_info(bytes)?.nbytes;
    match bytes.get(header..cbytes) {
        Some(value) if nbytes % width == 0 => Ok(Some(value)),
        _ => Err(Error::InvalidFormat(format!(
            "a repeated-value chunk of {nbytes} bytes holds a {width}-byte value that does not divide it"
        ))),
    }
}

/// Bytes `offset..offset + dst.len()` of a chunk in which `value` repeats.
pub(crate) fn fill_repeated(value: &[u8], offset: usize, dst: &mut [u8]) {
    let mut phase = offset % value.len();
    let mut out = &mut dst[..];
    while !out.is_empty() {
        let n = (value.len() - phase).min(out.len());
        out[..n].copy_from_slice(&value[phase..phase + n]);
        out = &mut out[n..];
        phase = 0;
    }
}

/// The shuffle a chunk records that c-blosc2 2.15 does not perform: newer
/// c-blosc2 (python-blosc2 4.x, for `<U` arrays) shuffles by SHUFFLE's
/// `filters_meta` bytes when it is not 0, not by the typesize; 2.15 ignores
/// the meta and unshuffles by the typesize, which gives other bytes.
/// `Some((typesize, group))` for such a chunk: its blocks, decoded by
/// c-blosc2 2.15, are put right by [`regroup`].
///
/// # Errors
/// [`Error::Unsupported`] when that shuffle comes with other filters:
/// undoing it after them would not give the items back.
pub(crate) fn grouped_shuffle(bytes: &[u8]) -> Result<Option<(usize, usize)>> {
    let (Some(&flags), Some(&flags2)) = (bytes.get(2), bytes.get(31)) else {
        return Ok(None);
    };
    let extended = flags & 0x05 == 0x05;
    let special = (flags2 >> 4) & b::BLOSC2_SPECIAL_MASK as u8 != 0;
    if !extended || special || flags & b::BLOSC_MEMCPYED as u8 != 0 {
        return Ok(None);
    }
    let (Some(filters), Some(metas)) = (bytes.get(16..22), bytes.get(24..30)) else {
        return Ok(None);
    };
    let typesize = usize::from(bytes[3]).max(1);
    let shuffle = b::BLOSC_SHUFFLE as u8;
    let Some(i) =
        (0..filters.len()).find(|&i| filters[i] == shuffle && metas[i] != 0 && usize::from(metas[i]) != typesize)
    else {
        return Ok(None);
    };
    if filters.iter().enumerate().any(|(j, &f)| j != i && f != b::BLOSC_NOFILTER as u8) {
        return Err(Error::unsupported(
            "SHUFFLE by groups with other filters",
            format!(
                "a chunk shuffles by {}-byte groups (SHUFFLE with filters_meta {}, written by c-blosc2 2.16 or \
                 later) together with other filters {filters:?}, which c-blosc2 {} cannot decode",
                metas[i],
                metas[i],
                blosc2_version()
            ),
        ));
    }
    Ok(Some((typesize, usize::from(metas[i]))))
}

/// Put right a block that c-blosc2 2.15 unshuffled by `typesize` though it
/// was shuffled by `group` bytes ([`grouped_shuffle`]): shuffle it back by
/// `typesize`, then unshuffle it by `group` (c-blosc2's `shuffle_generic`
/// and `unshuffle_generic`: the tail past the last whole group is as is).
pub(crate) fn regroup(block: &mut [u8], typesize: usize, group: usize, scratch: &mut Vec<u8>) {
    if typesize > 1 {
        let n = block.len() / typesize;
        transpose(block, scratch, n, typesize); // shuffle: n items of typesize bytes
    }
    let n = block.len() / group;
    transpose(block, scratch, group, n); // unshuffle: group streams of n bytes
}

/// `block`'s first `rows * cols` bytes, read as a `rows` x `cols` matrix,
/// transposed in place (through `scratch`); the tail stays as is.
pub(crate) fn transpose(block: &mut [u8], scratch: &mut Vec<u8>, rows: usize, cols: usize) {
    let whole = rows * cols;
    scratch.clear();
    scratch.extend_from_slice(&block[..whole]);
    for r in 0..rows {
        for c in 0..cols {
            block[c * rows + r] = scratch[r * cols + c];
        }
    }
}

impl Chunk<'_> {
    /// Whether [`DCtx::decompress_block`] can read this chunk's blocks of
    /// `blocksize` bytes one at a time: not when its blocks have another
    /// size, it has a dictionary (c-blosc2 only loads one for whole
    /// chunks) or the DELTA filter. A special chunk (zeros, NaNs, a repeated value) reads any
    /// items; an empty one (never written) has no blocks to read.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the header is damaged.
    pub(crate) fn by_blocks(&self, blocksize: usize) -> Result<bool> {
        let bytes = self.bytes();
        if bytes.is_empty() {
            return Ok(true);
        }
        let info = self.info()?;
        let h = ChunkHeader::parse(bytes).ok_or_else(|| Error::InvalidFormat("chunk header is corrupt".into()))?;
        let typesize = usize::from(h.typesize).max(1);
        // A Blosc1 header has no Blosc2 flags (dictionary, special kinds).
        let (dict, special) = if h.is_extended() { (h.dict(), h.special() != 0) } else { (false, false) };
        // DELTA encodes every block against the first, which a lone block
        // read does not decode.
        Ok((info.blocksize == blocksize || special)
            && blocksize > 0
            && blocksize % typesize == 0
            && !dict
            && !h.has_delta())
    }

    /// Whether the chunk was written with the DELTA filter, which encodes
    /// every block against the first.
    pub(crate) fn has_delta(&self) -> bool {
        ChunkHeader::parse(self.bytes()).is_some_and(|h| h.has_delta())
    }
}

/// Items `start..start + nitems` of the chunk `src`, decompressed with
/// `blosc2_getitem` (as c-blosc2 reads a frame's offsets index): the
/// decoder [`frame_check`] reads an offsets index with, a window at a time,
/// so that checking one never holds more than a window of it.
///
/// # Errors
/// [`Error::InvalidFormat`] if `src` is not a chunk or the window is not in
/// it; [`Error::Io`] if the window does not fit in memory; [`Error::Blosc`]
/// if it does not decompress.
pub(crate) fn inflate(src: &[u8], start: usize, nitems: usize) -> Result<Vec<u8>> {
    init();
    let typesize = usize::from(src.get(3).copied().unwrap_or(0));
    let len = nitems.saturating_mul(typesize);
    let (Ok(srcsize), Ok(start), Ok(n), Ok(len32)) =
        (i32::try_from(src.len()), i32::try_from(start), i32::try_from(nitems), i32::try_from(len))
    else {
        return Err(Error::InvalidFormat(format!("items {start}+{nitems} lie outside a chunk")));
    };
    let mut out = Vec::new();
    if out.try_reserve_exact(len).is_err() {
        let oom = std::io::Error::from(std::io::ErrorKind::OutOfMemory);
        return Err(Error::io(&format!("allocating {len} bytes of a chunk"), None, &oom));
    }
    out.resize(len, 0);
    // SAFETY: src is valid for srcsize bytes, out for len32 writable ones;
    // blosc2 writes at most destsize bytes.
    let rc = unsafe { b::blosc2_getitem(src.as_ptr().cast(), srcsize, start, n, out.as_mut_ptr().cast(), len32) };
    if rc < 0 {
        return Err(blosc_err("decompressing items", i64::from(rc)));
    }
    if rc != len32 {
        return Err(Error::InvalidFormat(format!("items {start}+{n} decompressed to {rc} bytes, not {len}")));
    }
    Ok(out)
}

/// Decompress the whole chunk `src` into a new vector of exactly `nbytes` bytes.
///
/// # Errors
/// [`Error::InvalidFormat`] if the chunk does not hold `nbytes` bytes;
/// [`Error::Blosc`] if it does not decompress.
#[cfg(feature = "testing")]
pub(crate) fn inflate_whole(src: &[u8], nbytes: usize) -> Result<Vec<u8>> {
    let chunk = Chunk { data: src.as_ptr(), len: src.len(), needs_free: false, _owner: std::marker::PhantomData };
    let mut out = vec![0u8; nbytes];
    DCtx::new(1)?.decompress(&chunk, &mut out, None)?;
    Ok(out)
}

/// Sizes read from a chunk header.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkInfo {
    /// Uncompressed bytes.
    pub(crate) nbytes: usize,
    /// Compressed bytes.
    pub(crate) cbytes: usize,
    /// Blosc block size in bytes.
    pub(crate) blocksize: usize,
}

/// A compressed chunk fetched from a super-chunk (owned or borrowed).
pub(crate) struct Chunk<'a> {
    data: *const u8,
    len: usize,
    needs_free: bool,
    /// The super-chunk, or the caller's buffer, the bytes belong to.
    _owner: std::marker::PhantomData<&'a [u8]>,
}

// SAFETY: the chunk bytes are immutable while borrowed (the super-chunk can
// only change through &mut), and owned ones are freed by whoever drops it.
unsafe impl Send for Chunk<'_> {}

// SAFETY: shared access only reads the bytes (see `bytes`); only the owner's
// drop frees them.
unsafe impl Sync for Chunk<'_> {}

impl<'a> Chunk<'a> {
    /// A chunk of bytes read from a file into the caller's buffer.
    pub(crate) fn from_slice(bytes: &'a [u8]) -> Chunk<'a> {
        Chunk { data: bytes.as_ptr(), len: bytes.len(), needs_free: false, _owner: std::marker::PhantomData }
    }

    /// The chunk c-blosc2 handed out at `data` (`len` bytes; to be freed
    /// with the chunk when `needs_free`).
    ///
    /// # Safety
    /// `data` points to `len` readable bytes that stay unchanged for `'a`
    /// (or is null with `len` 0), and, with `needs_free`, was allocated by
    /// c-blosc2's `malloc` for the caller.
    pub(crate) unsafe fn from_raw(data: *const u8, len: usize, needs_free: bool) -> Chunk<'a> {
        Chunk { data, len, needs_free, _owner: std::marker::PhantomData }
    }

    /// The compressed bytes.
    #[must_use]
    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: data points to len readable bytes for the chunk's lifetime.
        unsafe { std::slice::from_raw_parts(self.data, self.len) }
    }

    /// Decode the header.
    ///
    /// # Errors
    /// [`Error::InvalidFormat`] if the header is too short or inconsistent.
    pub(crate) fn info(&self) -> Result<ChunkInfo> {
        chunk_info(self.bytes())
    }
}

impl Drop for Chunk<'_> {
    fn drop(&mut self) {
        if self.needs_free {
            // SAFETY: c-blosc2 allocated it with malloc and handed ownership to us.
            unsafe { libc::free(self.data.cast_mut().cast()) }
        }
    }
}

/// Where each block's compressed stream lies in `old`, a chunk of `nbytes`
/// bytes in blocks of `blocksize`, if its blocks can be replaced one at a
/// time ([`splice`]): a plain chunk (extended header; not a copy, special,
/// lazy or with a dictionary) without the DELTA filter, which encodes every
/// block against the first. `Ok(None)` otherwise.
///
/// # Errors
/// [`Error::InvalidFormat`] if the header or a block start is damaged.
pub(crate) fn block_spans(old: &[u8], nbytes: usize, blocksize: usize) -> Result<Option<Vec<(usize, usize)>>> {
    let hlen = HEADER_LEN;
    let Some(h) = old.get(..hlen).and_then(ChunkHeader::parse).filter(|_| blocksize != 0) else {
        return Ok(None);
    };
    let info = chunk_info(old)?;
    if !h.is_plain() || h.has_delta() || info.nbytes != nbytes || info.blocksize != blocksize || nbytes % blocksize != 0
    {
        return Ok(None);
    }
    let n = nbytes / blocksize;
    let (first, end) = (hlen + 4 * n, info.cbytes);
    if end < first {
        return Err(Error::InvalidFormat("chunk is shorter than its block starts".into()));
    }
    let starts = block_starts(old, n);
    if let Some(bad) = starts.iter().find(|&&s| s < first || s >= end) {
        return Err(Error::InvalidFormat(format!("chunk has a block start ({bad}) outside it")));
    }
    let mut sorted = starts.clone();
    sorted.sort_unstable();
    Ok(Some(starts.iter().map(|&s| (s, block_end(&sorted, s, end))).collect()))
}

/// `old` with some blocks replaced: `new[i]`, when given, is block `i`
/// compressed alone (a one-block chunk made with the same parameters),
/// and the other blocks keep their streams (`spans`, from [`block_spans`]).
/// Blosc2 compresses each block on its own, so a block's stream does not
/// depend on its neighbours. `None` if a new block was encoded otherwise
/// than `old` (its header differs: it did not compress and was copied,
/// another codec or filter): the caller compresses the whole chunk then.
pub(crate) fn splice(old: &[u8], spans: &[(usize, usize)], new: &[Option<Vec<u8>>]) -> Option<Vec<u8>> {
    let hlen = HEADER_LEN;
    let same = |c: &[u8]| c.len() >= hlen + 4 && c[..4] == old[..4] && c[16..hlen] == old[16..hlen];
    fn stream(c: &[u8], hlen: usize) -> Option<&[u8]> {
        let start = u32::from_le_bytes(c[hlen..hlen + 4].try_into().expect("4 bytes")) as usize;
        let end = chunk_info(c).ok()?.cbytes;
        c.get(start..end).filter(|_| start >= hlen + 4)
    }
    let first = hlen + 4 * spans.len();
    let mut out = Vec::with_capacity(old.len());
    out.extend_from_slice(&old[..first]);
    for (i, &(s, e)) in spans.iter().enumerate() {
        let at = u32::try_from(out.len()).ok()?;
        out[hlen + 4 * i..hlen + 4 * i + 4].copy_from_slice(&at.to_le_bytes());
        match new.get(i).and_then(Option::as_deref) {
            Some(c) if same(c) => out.extend_from_slice(stream(c, hlen)?),
            Some(_) => return None,
            None => out.extend_from_slice(&old[s..e]),
        }
    }
    let cbytes = i32::try_from(out.len()).ok()?;
    out[12..16].copy_from_slice(&cbytes.to_le_bytes());
    Some(out)
}

/// Decode the sizes in a chunk header, checking them against the buffer.
///
/// # Errors
/// [`Error::InvalidFormat`] if `bytes` is not a complete chunk.
pub(crate) fn chunk_info(bytes: &[u8]) -> Result<ChunkInfo> {
    if bytes.len() < b::BLOSC_MIN_HEADER_LENGTH as usize {
        return Err(Error::InvalidFormat(format!("chunk of {} bytes is shorter than a header", bytes.len())));
    }
    let (mut nbytes, mut cbytes, mut blocksize) = (0i32, 0i32, 0i32);
    // SAFETY: bytes holds at least a minimal header, which is all this reads.
    let rc = unsafe { b::blosc2_cbuffer_sizes(bytes.as_ptr().cast(), &mut nbytes, &mut cbytes, &mut blocksize) };
    if rc < 0 || nbytes < 0 || cbytes < 0 || blocksize < 0 || cbytes as usize > bytes.len() {
        return Err(Error::InvalidFormat("chunk header is corrupt".into()));
    }
    Ok(ChunkInfo { nbytes: nbytes as usize, cbytes: cbytes as usize, blocksize: blocksize as usize })
}

/// A special chunk of `nbytes` bytes in which every `typesize`-byte item is `value`.
///
/// # Errors
/// [`Error::Blosc`] if c-blosc2 refuses.
pub(crate) fn repeat_chunk(
    comp: &Compression,
    typesize: usize,
    blocksize: usize,
    nbytes: usize,
    value: &[u8],
) -> Result<Vec<u8>> {
    init();
    if typesize > CHUNK_MAX_TYPESIZE && value.iter().any(|&x| x != 0) {
        // A chunk repeats a value of at most 255 bytes: larger items are
        // compressed like any chunk (they repeat, so they shrink well).
        let items = value.repeat(nbytes / typesize.max(1));
        let mut cctx = CCtx::new(comp, typesize, blocksize, 1)?;
        return cctx.compress(&items);
    }
    let cap = MAX_OVERHEAD + typesize;
    let mut out = vec![0u8; cap];
    let cp = comp.to_blosc(chunk_typesize(typesize), blocksize, 1);
    // SAFETY: out has cap bytes; value has typesize bytes (checked by callers).
    let rc = unsafe {
        if value.iter().all(|&x| x == 0) {
            b::blosc2_chunk_zeros(cp, nbytes as i32, out.as_mut_ptr().cast(), cap as i32)
        } else {
            b::blosc2_chunk_repeatval(cp, nbytes as i32, out.as_mut_ptr().cast(), cap as i32, value.as_ptr().cast())
        }
    };
    if rc < 0 {
        return Err(blosc_err("creating a special chunk", i64::from(rc)));
    }
    out.truncate(rc as usize);
    drop_stale_dict_flag(&mut out);
    Ok(out)
}

/// Compress a frame's offsets index as c-blosc2 does (`frame_append_chunk`:
/// BloscLZ, 8-byte items, 16 KiB blocks, never split), with one thread.
pub(crate) fn compress_offsets(offsets: &[i64]) -> Result<Vec<u8>> {
    init();
    let bytes: Vec<u8> = offsets.iter().flat_map(|o| o.to_le_bytes()).collect();
    // SAFETY: returns a plain struct by value.
    let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
    cp.splitmode = b::BLOSC_NEVER_SPLIT as i32;
    cp.typesize = 8;
    cp.blocksize = 16 * 1024;
    cp.nthreads = 1;
    cp.compcode = b::BLOSC_BLOSCLZ as u8;
    // SAFETY: the parameters are passed by value; a NULL return is handled.
    let ctx = NonNull::new(unsafe { b::blosc2_create_cctx(cp) })
        .map(CCtx)
        .ok_or_else(|| Error::blosc("creating a compression context", None))?;
    let mut ctx = ctx;
    ctx.compress(&bytes)
}

/// The kind of special chunk to fill a fresh super-chunk with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// All zeros.
    Zeros,
    /// Unspecified contents (read back as zeros by c-blosc2).
    Uninit,
    /// NaNs of the native float of the item size (4 or 8 bytes; c-blosc2
    /// writes them in the machine's byte order).
    Nan,
}

/// The Blosc format version c-blosc 1.x writes and the newest it reads
/// (`BLOSC_VERSION_FORMAT` of c-blosc 1.21). c-blosc 1.x refuses a chunk
/// whose first byte is higher ("not a Blosc buffer").
pub(crate) const BLOSC1_VERSION_FORMAT: u8 = 2;

/// Compress `src` into a chunk that c-blosc 1.x (bcolz, python-blosc 1.x)
/// decompresses: codec `cname` (`blosclz`, `lz4`, `lz4hc`, `zlib`, `zstd`),
/// `shuffle` 0 (none), 1 (byte) or 2 (bit), items of `typesize` bytes.
///
/// c-blosc2 writes such a chunk only through `blosc1_compress` with the
/// environment variable `BLOSC_BLOSC1_COMPAT` set: a 16-byte header without
/// the Blosc2 extended header, block starts and streams as c-blosc 1.x lays
/// them out (no run-length or special encodings, which need the extended
/// header), and the Blosc2 format version (5) in its first byte. That byte
/// is rewritten to [`BLOSC1_VERSION_FORMAT`], the version c-blosc 1.x
/// accepts; nothing else differs (tests/blz.rs has bcolz-zipline read every
/// codec and shuffle back). The variable is set once per process, before the
/// first call, and kept; `blosc1_compress` runs under c-blosc2's global
/// lock and ours (the compressor is global state).
///
/// # Errors
/// [`Error::InvalidArgument`] for an unknown codec; [`Error::Blosc`] if
/// compression fails or the environment (`BLOSC_NOLOCK`) made c-blosc2
/// write a Blosc2 header.
pub(crate) fn compress_blosc1(cname: &str, clevel: u8, shuffle: u8, typesize: usize, src: &[u8]) -> Result<Vec<u8>> {
    static COMPAT: Once = Once::new();
    static GLOBAL: Mutex<()> = Mutex::new(());
    init();
    COMPAT.call_once(|| std::env::set_var("BLOSC_BLOSC1_COMPAT", "1"));
    let name = CString::new(cname).map_err(|_| Error::InvalidArgument(format!("codec '{cname}'")))?;
    let Ok(nbytes) = i32::try_from(src.len()) else {
        return Err(Error::InvalidArgument(format!("a chunk of {} bytes is too large for Blosc", src.len())));
    };
    let cap = src.len() + MAX_OVERHEAD;
    let mut out: Vec<u8> = Vec::with_capacity(cap);
    let _guard = GLOBAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    // c-blosc2 splits a block into one stream per byte of the item from 32
    // items a block on, c-blosc 1.x from 128: chunks split in between do not
    // decode there. Unsplit blocks (the flag c-blosc 1.x writes for zstd and
    // zlib) decode in both.
    // SAFETY: sets a global of c-blosc2's, under our lock.
    unsafe { b::blosc1_set_splitmode(b::BLOSC_NEVER_SPLIT as i32) };
    // SAFETY: name is a NUL-terminated string that c-blosc2 only reads.
    if unsafe { b::blosc1_set_compressor(name.as_ptr()) } < 0 {
        return Err(Error::InvalidArgument(format!("codec '{cname}' is not one c-blosc 1.x knows")));
    }
    // SAFETY: src is valid for nbytes bytes, out has cap writable bytes;
    // c-blosc2 writes at most destsize bytes and returns how many.
    let rc = unsafe {
        b::blosc1_compress(
            i32::from(clevel),
            i32::from(shuffle),
            typesize.clamp(1, 255),
            src.len(),
            src.as_ptr().cast(),
            out.as_mut_ptr().cast(),
            cap,
        )
    };
    drop(_guard);
    if rc <= 0 {
        return Err(blosc_err("compression", i64::from(rc)));
    }
    // SAFETY: c-blosc2 initialised the first rc bytes.
    unsafe { out.set_len(rc as usize) };
    let flags = out.get(2).copied().unwrap_or(0);
    let extended = flags & (b::BLOSC_DOSHUFFLE as u8 | b::BLOSC_DOBITSHUFFLE as u8)
        == (b::BLOSC_DOSHUFFLE as u8 | b::BLOSC_DOBITSHUFFLE as u8);
    if out.len() < b::BLOSC_MIN_HEADER_LENGTH as usize || extended || out[0] != b::BLOSC2_VERSION_FORMAT as u8 {
        return Err(Error::blosc(
            format!(
                "compressing a Blosc1 chunk of {nbytes} bytes (c-blosc2 wrote a Blosc2 header: is BLOSC_NOLOCK set?)"
            ),
            None,
        ));
    }
    // Bit-shuffle of a block whose item count is not a multiple of 8 changed
    // in format 3: c-blosc 1.x would unshuffle such a chunk differently.
    // Those chunks are made again with byte shuffle (same values, another filter).
    let blocksize = u32::from_le_bytes([out[8], out[9], out[10], out[11]]) as usize;
    let ts = usize::from(out[3]).max(1);
    let bit = flags & b::BLOSC_DOBITSHUFFLE as u8 != 0 && flags & b::BLOSC_MEMCPYED as u8 == 0;
    if bit && blocksize > 0 && ((blocksize / ts) % 8 != 0 || ((src.len() % blocksize) / ts) % 8 != 0) {
        return compress_blosc1(cname, clevel, 1, typesize, src);
    }
    out[0] = BLOSC1_VERSION_FORMAT;
    Ok(out)
}
