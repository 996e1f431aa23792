//! Compression parameters: [`CParams`] (what a user asks for, c-blosc2's
//! ids) and [`Compression`] (those with the prefilter, turned into
//! `blosc2_cparams` in one place).

use blosc2_sys as b;

/// Compression parameters of an array's chunks. Codec and filter ids are
/// those of c-blosc2 (`BLOSC_ZSTD`, `BLOSC_SHUFFLE`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CParams {
    /// Codec (`BLOSC_ZSTD`, …).
    pub codec: u8,
    /// Codec meta.
    pub codec_meta: u8,
    /// Compression level 0..=9.
    pub clevel: u8,
    /// Whether to use a dictionary.
    pub use_dict: bool,
    /// Split mode (`BLOSC_*_SPLIT`).
    pub splitmode: i32,
    /// Filter pipeline.
    pub filters: [u8; 6],
    /// Filter metas.
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
            codec: b::BLOSC_ZSTD as u8,
            codec_meta: 0,
            clevel: 5,
            use_dict: false,
            splitmode: b::BLOSC_AUTO_SPLIT as i32,
            filters: [0, 0, 0, 0, 0, b::BLOSC_SHUFFLE as u8],
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
        let (a, b) = (&self.cparams, stored);
        self.prefilter.is_none()
            && (a.codec, a.codec_meta, a.clevel, a.use_dict, a.filters, a.filters_meta)
                == (b.codec, b.codec_meta, b.clevel, b.use_dict, b.filters, b.filters_meta)
    }

    pub(crate) fn to_blosc(self, typesize: usize, blocksize: usize, nthreads: usize) -> b::blosc2_cparams {
        let c = self.cparams;
        // SAFETY: returns a plain struct by value.
        let mut cp = unsafe { b::blosc2_get_blosc2_cparams_defaults() };
        cp.compcode = c.codec;
        cp.compcode_meta = c.codec_meta;
        cp.clevel = c.clevel;
        cp.use_dict = i32::from(c.use_dict);
        cp.typesize = typesize as i32;
        cp.blocksize = blocksize as i32;
        cp.splitmode = c.splitmode;
        cp.nthreads = nthreads.clamp(1, i16::MAX as usize) as i16;
        cp.filters = c.filters;
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
