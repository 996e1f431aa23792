//! Compression parameters: [`CParams`] (what a user asks for: a [`Codec`],
//! a [`SplitMode`], a pipeline of [`Filter`]s) and [`Compression`] (those
//! with the prefilter, turned into `blosc2_cparams` in one place).

use std::fmt;

use blosc2_sys as b;

use crate::codec::{self, filter};
use crate::error::{Error, Result};

/// A codec, by its c-blosc2 id. The codecs c-blosc2 ships have names;
/// any other id (a plugin's or user's codec, 32 and up, registered with
/// `blosc2_register_codec`, or an id nothing is known under) is
/// [`Codec::Other`], so that every id a file can record comes back as it was.
///
/// ```
/// use caterva::Codec;
/// assert_eq!(Codec::from_id(5), Codec::Zstd);
/// assert_eq!(Codec::Zstd.id(), 5);
/// assert_eq!(Codec::from_id(200), Codec::Other(200));
/// assert_eq!(Codec::Lz4hc.to_string(), "lz4hc");
/// assert_eq!(Codec::Other(200).to_string(), "codec 200");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Codec {
    /// BloscLZ (`BLOSC_BLOSCLZ`).
    BloscLz,
    /// LZ4 (`BLOSC_LZ4`).
    Lz4,
    /// LZ4 high compression (`BLOSC_LZ4HC`).
    Lz4hc,
    /// zlib (`BLOSC_ZLIB`).
    Zlib,
    /// Zstandard (`BLOSC_ZSTD`).
    Zstd,
    /// Any other id: a plugin's or user's codec, or none at all (a context
    /// refuses an id c-blosc2 cannot compress with). [`Codec::from_id`]
    /// never makes one with the id of a named codec; one made by hand with
    /// such an id compresses as that codec but compares unequal to it.
    Other(u8),
}

impl Codec {
    /// The codec with c-blosc2 id `id`: a named one for the ids c-blosc2
    /// ships codecs under, else [`Codec::Other`].
    #[must_use]
    pub const fn from_id(id: u8) -> Codec {
        match id {
            codec::BLOSCLZ => Codec::BloscLz,
            codec::LZ4 => Codec::Lz4,
            codec::LZ4HC => Codec::Lz4hc,
            codec::ZLIB => Codec::Zlib,
            codec::ZSTD => Codec::Zstd,
            other => Codec::Other(other),
        }
    }

    /// Its c-blosc2 id (`BLOSC_ZSTD`…).
    #[must_use]
    pub const fn id(self) -> u8 {
        match self {
            Codec::BloscLz => codec::BLOSCLZ,
            Codec::Lz4 => codec::LZ4,
            Codec::Lz4hc => codec::LZ4HC,
            Codec::Zlib => codec::ZLIB,
            Codec::Zstd => codec::ZSTD,
            Codec::Other(id) => id,
        }
    }
}

impl fmt::Display for Codec {
    /// c-blosc2's name (`blosc2_compcode_to_compname`: `zstd`, `lz4hc`…),
    /// or `codec N` for any other id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match codec::name(self.id()) {
            Some(name) => f.write_str(name),
            None => write!(f, "codec {}", self.id()),
        }
    }
}

/// A filter of the pipeline, by its c-blosc2 id: the filters c-blosc2
/// ships have names, any other id (a plugin's or user's, 32 and up,
/// registered with `blosc2_register_filter`, or an id nothing is known
/// under) is [`Filter::Other`], so that every id a file can record comes
/// back as it was.
///
/// ```
/// use caterva::Filter;
/// assert_eq!(Filter::from_id(1), Filter::Shuffle);
/// assert_eq!(Filter::TruncPrec.id(), 4);
/// assert_eq!(Filter::from_id(40), Filter::Other(40));
/// assert_eq!(Filter::BitShuffle.to_string(), "bitshuffle");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Filter {
    /// An empty slot of the pipeline (`BLOSC_NOFILTER`).
    NoFilter,
    /// Byte shuffle (`BLOSC_SHUFFLE`).
    Shuffle,
    /// Bit shuffle (`BLOSC_BITSHUFFLE`).
    BitShuffle,
    /// Delta against the first block (`BLOSC_DELTA`).
    Delta,
    /// Truncated precision of floats, its meta the bits kept (`BLOSC_TRUNC_PREC`).
    TruncPrec,
    /// Any other id: a plugin's or user's filter, or none at all (a context
    /// refuses an id c-blosc2 cannot run). [`Filter::from_id`] never makes
    /// one with the id of a named filter; one made by hand with such an id
    /// runs as that filter but compares unequal to it.
    Other(u8),
}

impl Filter {
    /// The filter with c-blosc2 id `id`: a named one for the ids c-blosc2
    /// ships filters under, else [`Filter::Other`].
    #[must_use]
    pub const fn from_id(id: u8) -> Filter {
        match id {
            filter::NOFILTER => Filter::NoFilter,
            filter::SHUFFLE => Filter::Shuffle,
            filter::BITSHUFFLE => Filter::BitShuffle,
            filter::DELTA => Filter::Delta,
            filter::TRUNC_PREC => Filter::TruncPrec,
            other => Filter::Other(other),
        }
    }

    /// Its c-blosc2 id (`BLOSC_SHUFFLE`…).
    #[must_use]
    pub const fn id(self) -> u8 {
        match self {
            Filter::NoFilter => filter::NOFILTER,
            Filter::Shuffle => filter::SHUFFLE,
            Filter::BitShuffle => filter::BITSHUFFLE,
            Filter::Delta => filter::DELTA,
            Filter::TruncPrec => filter::TRUNC_PREC,
            Filter::Other(id) => id,
        }
    }
}

impl fmt::Display for Filter {
    /// `nofilter`, `shuffle`, `bitshuffle`, `delta`, `trunc_prec` (without
    /// its meta; [`filter::describe`](crate::codec::filter::describe) shows
    /// it), or `filter N` for any other id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Filter::NoFilter => "nofilter",
            Filter::Shuffle => "shuffle",
            Filter::BitShuffle => "bitshuffle",
            Filter::Delta => "delta",
            Filter::TruncPrec => "trunc_prec",
            Filter::Other(id) => return write!(f, "filter {id}"),
        };
        f.write_str(name)
    }
}

/// How c-blosc2 splits blocks into streams, one per byte of an item,
/// before compressing them (`BLOSC_*_SPLIT`).
///
/// ```
/// use caterva::SplitMode;
/// assert_eq!(SplitMode::from_id(3), Some(SplitMode::Auto));
/// assert_eq!(SplitMode::Never.id(), 2);
/// assert_eq!(SplitMode::from_id(0), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SplitMode {
    /// Always split (`BLOSC_ALWAYS_SPLIT`).
    Always,
    /// Never split (`BLOSC_NEVER_SPLIT`).
    Never,
    /// Split where c-blosc2's heuristics expect it to pay (`BLOSC_AUTO_SPLIT`).
    Auto,
    /// Split as c-blosc2 1.x readers expect (`BLOSC_FORWARD_COMPAT_SPLIT`).
    ForwardCompat,
}

const ALWAYS_SPLIT: i32 = b::BLOSC_ALWAYS_SPLIT as i32;
const NEVER_SPLIT: i32 = b::BLOSC_NEVER_SPLIT as i32;
const AUTO_SPLIT: i32 = b::BLOSC_AUTO_SPLIT as i32;
const FORWARD_COMPAT_SPLIT: i32 = b::BLOSC_FORWARD_COMPAT_SPLIT as i32;

impl SplitMode {
    /// The split mode with c-blosc2 id `id` (`BLOSC_*_SPLIT`, 1 to 4),
    /// `None` for any other number.
    #[must_use]
    pub const fn from_id(id: i32) -> Option<SplitMode> {
        match id {
            ALWAYS_SPLIT => Some(SplitMode::Always),
            NEVER_SPLIT => Some(SplitMode::Never),
            AUTO_SPLIT => Some(SplitMode::Auto),
            FORWARD_COMPAT_SPLIT => Some(SplitMode::ForwardCompat),
            _ => None,
        }
    }

    /// Its c-blosc2 id (`BLOSC_AUTO_SPLIT`…).
    #[must_use]
    pub const fn id(self) -> i32 {
        match self {
            SplitMode::Always => ALWAYS_SPLIT,
            SplitMode::Never => NEVER_SPLIT,
            SplitMode::Auto => AUTO_SPLIT,
            SplitMode::ForwardCompat => FORWARD_COMPAT_SPLIT,
        }
    }
}

/// The split mode a caller (C) gave as a number, checked.
///
/// # Errors
/// [`Error::InvalidArgument`] for a number that is not a `BLOSC_*_SPLIT` value.
pub(crate) fn split_mode(id: i32) -> Result<SplitMode> {
    SplitMode::from_id(id).ok_or_else(|| Error::InvalidArgument(format!("splitmode {id} is not a BLOSC_*_SPLIT value")))
}

/// Compression parameters of an array's chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CParams {
    /// Codec.
    pub codec: Codec,
    /// Codec meta.
    pub codec_meta: u8,
    /// Compression level 0..=9.
    pub clevel: u8,
    /// Whether to use a dictionary.
    pub use_dict: bool,
    /// Split mode.
    pub splitmode: SplitMode,
    /// Filter pipeline, applied first to last ([`Filter::NoFilter`] for an empty slot).
    pub filters: [Filter; 6],
    /// Filter metas, one per slot of [`CParams::filters`].
    pub filters_meta: [u8; 6],
}

/// A Blosc2 prefilter that a C caller set in `caterva_config_t` (C callers only).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prefilter {
    /// The function.
    pub(crate) func: b::blosc2_prefilter_fn,
    /// Its parameter block, which we never dereference.
    pub(crate) params: *mut b::blosc2_prefilter_params,
}

// SAFETY: the only raw pointer is a prefilter parameter block that the C
// caller hands us for use from blosc2's (already multi-threaded) compressor;
// we never dereference it.
unsafe impl Send for Prefilter {}

// SAFETY: as above; shared references only copy the pointer.
unsafe impl Sync for Prefilter {}

impl PartialEq for Prefilter {
    /// The same function and parameter block (by address: a compressor
    /// made for one serves the other).
    fn eq(&self, other: &Self) -> bool {
        self.func.map(|f| f as usize) == other.func.map(|f| f as usize) && self.params == other.params
    }
}

impl Eq for Prefilter {}

/// Everything that decides how chunks are compressed: the parameters and,
/// for C callers, a prefilter. The one type every compressor is made from;
/// it becomes c-blosc2's `blosc2_cparams` in one place ([`Compression::to_blosc`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Compression {
    /// Codec, level, filters.
    pub(crate) cparams: CParams,
    /// A C caller's prefilter.
    pub(crate) prefilter: Option<Prefilter>,
}

impl Default for CParams {
    fn default() -> Self {
        CParams {
            codec: Codec::Zstd,
            codec_meta: 0,
            clevel: 5,
            use_dict: false,
            splitmode: SplitMode::Auto,
            filters: [
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::NoFilter,
                Filter::Shuffle,
            ],
            filters_meta: [0; 6],
        }
    }
}

impl Compression {
    /// Plain parameters, no prefilter.
    pub(crate) fn plain(cparams: CParams) -> Self {
        Compression { cparams, prefilter: None }
    }

    /// Whether chunks compressed with `self` and chunks a super-chunk
    /// records as compressed with `stored` are the same bytes for the same
    /// data (so a compressed chunk can be copied as is).
    pub(crate) fn same_encoding(&self, stored: &CParams) -> bool {
        // By id: a hand-made `Other` with a named codec's id compresses as that codec.
        let key =
            |c: &CParams| (c.codec.id(), c.codec_meta, c.clevel, c.use_dict, c.filters.map(Filter::id), c.filters_meta);
        self.prefilter.is_none() && key(&self.cparams) == key(stored)
    }

    pub(crate) fn to_blosc(self, typesize: usize, blocksize: usize, nthreads: usize) -> b::blosc2_cparams {
        let c = self.cparams;
        // SAFETY: returns a plain struct by value.
        let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
        cp.compcode = c.codec.id();
        cp.compcode_meta = c.codec_meta;
        cp.clevel = c.clevel;
        cp.use_dict = i32::from(c.use_dict);
        cp.typesize = typesize as i32;
        cp.blocksize = blocksize as i32;
        cp.splitmode = c.splitmode.id();
        cp.nthreads = nthreads.clamp(1, i16::MAX as usize) as i16;
        cp.filters = c.filters.map(Filter::id);
        cp.filters_meta = c.filters_meta;
        // c-blosc2 2.15 shuffles by the typesize whatever SHUFFLE's meta
        // says, and records the meta; newer readers shuffle by a non-zero
        // meta ([`grouped_shuffle`]). Record what was done.
        for (f, m) in cp.filters.iter().zip(cp.filters_meta.iter_mut()) {
            if *f == b::BLOSC_SHUFFLE as u8 {
                *m = 0;
            }
        }
        if let Some(p) = self.prefilter {
            cp.prefilter = p.func;
            cp.preparams = p.params;
        }
        cp
    }
}
