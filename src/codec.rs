//! The codecs and filters c-blosc2 ships, by id (what [`Codec::id`] and
//! [`Filter::id`] give for [`CParams::codec`] and [`CParams::filters`])
//! and by name.
//!
//! ```
//! use caterva::codec::{self, filter};
//! assert_eq!(codec::name(codec::ZSTD), Some("zstd"));
//! assert_eq!(codec::by_name("lz4"), Some(codec::LZ4));
//! assert_eq!(filter::describe(filter::TRUNC_PREC, 10).as_deref(), Some("trunc_prec(10)"));
//! ```
//!
//! [`CParams::codec`]: crate::CParams::codec
//! [`CParams::filters`]: crate::CParams::filters
//! [`Codec::id`]: crate::Codec::id
//! [`Filter::id`]: crate::Filter::id

/// The BloscLZ codec.
pub const BLOSCLZ: u8 = blosc2_sys::BLOSC_BLOSCLZ as u8;
/// The LZ4 codec.
pub const LZ4: u8 = blosc2_sys::BLOSC_LZ4 as u8;
/// The LZ4 high-compression codec.
pub const LZ4HC: u8 = blosc2_sys::BLOSC_LZ4HC as u8;
/// The zlib codec.
pub const ZLIB: u8 = blosc2_sys::BLOSC_ZLIB as u8;
/// The Zstandard codec.
pub const ZSTD: u8 = blosc2_sys::BLOSC_ZSTD as u8;

/// Every codec c-blosc2 ships, with its name, in id order.
pub const ALL: [(u8, &str); 5] = [(BLOSCLZ, "blosclz"), (LZ4, "lz4"), (LZ4HC, "lz4hc"), (ZLIB, "zlib"), (ZSTD, "zstd")];

/// The name of codec `id` (`"zstd"`), or `None` for an id c-blosc2 does not
/// ship a codec for (a plugin's, or none at all).
#[must_use]
pub fn name(id: u8) -> Option<&'static str> {
    ALL.iter().find(|(c, _)| *c == id).map(|(_, n)| *n)
}

/// The id of the codec called `name` (as [`name`] spells it).
#[must_use]
pub fn by_name(name: &str) -> Option<u8> {
    ALL.iter().find(|(_, n)| *n == name).map(|(c, _)| *c)
}

/// The names python-blosc2 gives the codec plugins (`blosc2.Codec`), by id
/// (c-blosc2's `codecs-registry.h`): codecs this build does not ship.
const PLUGINS: [(u8, &str); 9] = [
    (32, "NDLZ"),
    (33, "ZFP_ACC"),
    (34, "ZFP_PREC"),
    (35, "ZFP_RATE"),
    (36, "OPENHTJ2K"),
    (37, "GROK"),
    (38, "OPENZL"),
    (39, "J2K"),
    (40, "HTJ2K"),
];

/// The name of codec plugin `id` (`"ZFP_ACC"` for 33), as python-blosc2
/// calls it; `None` for any other id. c-blosc2 is built here without its
/// plugins: what uses one is named with it ("unsupported").
#[must_use]
pub fn plugin_name(id: u8) -> Option<&'static str> {
    PLUGINS.iter().find(|(c, _)| *c == id).map(|(_, n)| *n)
}

/// The filters of a pipeline ([`CParams::filters`](crate::CParams::filters)).
pub mod filter {
    /// The names python-blosc2 gives the filter plugins (`blosc2.Filter`),
    /// by id (c-blosc2's `filters-registry.h`).
    const PLUGINS: [(u8, &str); 5] =
        [(32, "NDCELL"), (33, "NDMEAN"), (34, "BYTEDELTA_BUGGY"), (35, "BYTEDELTA"), (36, "INT_TRUNC")];

    /// The name of filter plugin `id` (`"BYTEDELTA"` for 35), as
    /// python-blosc2 calls it; `None` for any other id.
    #[must_use]
    pub fn plugin_name(id: u8) -> Option<&'static str> {
        PLUGINS.iter().find(|(f, _)| *f == id).map(|(_, n)| *n)
    }

    /// An empty slot of the pipeline.
    pub const NOFILTER: u8 = blosc2_sys::BLOSC_NOFILTER as u8;
    /// Byte shuffle.
    pub const SHUFFLE: u8 = blosc2_sys::BLOSC_SHUFFLE as u8;
    /// Bit shuffle.
    pub const BITSHUFFLE: u8 = blosc2_sys::BLOSC_BITSHUFFLE as u8;
    /// Delta against the first block.
    pub const DELTA: u8 = blosc2_sys::BLOSC_DELTA as u8;
    /// Truncated precision of floats (its meta: the bits kept).
    pub const TRUNC_PREC: u8 = blosc2_sys::BLOSC_TRUNC_PREC as u8;

    /// Filter `id` with its meta `meta` as text: `"shuffle"`, `"delta"`,
    /// `"trunc_prec(10)"` (the only one whose meta is shown), `"nofilter"`
    /// for an empty slot; `None` for an id c-blosc2 does not ship a filter
    /// for (a plugin's, or none at all).
    #[must_use]
    pub fn describe(id: u8, meta: u8) -> Option<String> {
        let name = match id {
            NOFILTER => "nofilter",
            SHUFFLE => "shuffle",
            BITSHUFFLE => "bitshuffle",
            DELTA => "delta",
            TRUNC_PREC => return Some(format!("trunc_prec({meta})")),
            _ => return None,
        };
        Some(name.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codec_names_and_ids() {
        assert_eq!((BLOSCLZ, LZ4, LZ4HC, ZLIB, ZSTD), (0, 1, 2, 4, 5));
        for (id, n) in ALL {
            assert_eq!(name(id), Some(n));
            assert_eq!(by_name(n), Some(id));
        }
        assert_eq!(name(3), None);
        assert_eq!(name(200), None);
        assert_eq!(by_name("snappy"), None);
        assert_eq!(by_name("ZSTD"), None);
    }

    #[test]
    fn filter_text() {
        use filter::*;
        assert_eq!((NOFILTER, SHUFFLE, BITSHUFFLE, DELTA, TRUNC_PREC), (0, 1, 2, 3, 4));
        assert_eq!(describe(SHUFFLE, 0).as_deref(), Some("shuffle"));
        assert_eq!(describe(BITSHUFFLE, 7).as_deref(), Some("bitshuffle"));
        assert_eq!(describe(DELTA, 0).as_deref(), Some("delta"));
        assert_eq!(describe(TRUNC_PREC, 10).as_deref(), Some("trunc_prec(10)"));
        assert_eq!(describe(NOFILTER, 0).as_deref(), Some("nofilter"));
        assert_eq!(describe(35, 0), None);
        assert_eq!(filter::plugin_name(35), Some("BYTEDELTA"));
        assert_eq!(filter::plugin_name(36), Some("INT_TRUNC"));
        assert_eq!(filter::plugin_name(4), None);
        assert_eq!(super::plugin_name(33), Some("ZFP_ACC"));
        assert_eq!(super::plugin_name(5), None);
    }
}
