//! The binding to c-blosc2, the only code that calls it: thin and free of
//! policy (no journals, checksums or arrays). The engine compresses and
//! decodes chunks with it ([`CCtx`], [`DCtx`], [`Chunk`]); the store adds
//! super-chunks over it (`store/schunk.rs`), with its own I/O backend and
//! frame checks.
//!
//! Thread safety: a context is used by one thread at a time (the engine
//! keeps one per worker); a decoded [`Chunk`] may be read from many.
//!
//! Fork safety: c-blosc2 contexts that have started threads must never be
//! used or freed in a forked child, where those threads do not exist. The
//! engine keeps its [`CCtx`]/[`DCtx`] per process (see [`crate::fork`]).
//! c-blosc2's global context and its mutex are only used by
//! `blosc1_*`/`blosc2_compress`-style calls, which this binding makes in one
//! place only: [`compress_blosc1`], the BLZ export's compressor (one global
//! thread, so no threads a forked child would lack).

mod base;
mod chunk;
pub(crate) mod chunk_header;
mod cparams;
#[cfg(test)]
mod tests;

pub(crate) use base::{
    blosc2_version, cstring, free, init, raw_bytes, FRAME_VLMETALAYERS, MAX_METALAYERS, MAX_VLMETALAYERS,
    METALAYER_NAME_MAXLEN,
};
#[cfg(feature = "testing")]
pub(crate) use chunk::inflate_whole;
pub(crate) use chunk::{
    block_spans, chunk_info, chunk_typesize, compress_blosc1, compress_offsets, decompress_into, dparams, inflate,
    repeat_chunk, splice, CCtx, Chunk, DCtx, Special,
};
pub(crate) use cparams::{split_mode, Compression, Prefilter};
pub use cparams::{CParams, Codec, Filter, SplitMode};
