use super::chunk::{check_decodable, chunk_typesize, inflate_whole, regroup, CCtx};
use super::cparams::{CParams, Codec, Compression, Filter, SplitMode};
use crate::blosc2::chunk_header::typesize_fits;
use crate::codec::{self, filter};

fn shuffle(ts: usize, src: &[u8]) -> Vec<u8> {
    let n = src.len() / ts;
    let mut out = src.to_vec();
    for j in 0..ts {
        for i in 0..n {
            out[j * n + i] = src[i * ts + j];
        }
    }
    out
}

fn unshuffle(ts: usize, src: &[u8]) -> Vec<u8> {
    let n = src.len() / ts;
    let mut out = src.to_vec();
    for i in 0..n {
        for j in 0..ts {
            out[i * ts + j] = src[j * n + i];
        }
    }
    out
}

/// A block shuffled by `group` bytes (newer c-blosc2), unshuffled by
/// the typesize (c-blosc2 2.15), comes back whole after `regroup`,
/// tails past the last whole group included.
#[test]
fn regroup_undoes_a_shuffle_by_groups() {
    for (typesize, group, len) in [(1, 4, 400), (20, 4, 200), (20, 4, 213), (28, 4, 1000), (8, 2, 77), (3, 5, 64)] {
        let block: Vec<u8> = (0..len).map(|i| (i * 37 % 251) as u8).collect();
        let mut got = unshuffle(typesize, &shuffle(group, &block));
        regroup(&mut got, typesize, group, &mut Vec::new());
        assert_eq!(got, block, "typesize {typesize}, group {group}, {len} bytes");
    }
}

/// c-blosc2 2.15 stores data it cannot compress as a copy and, with
/// `use_dict`, left the dictionary flag set: python-blosc2 (c-blosc2
/// 3.x) then fails on the chunk, and our frame check refused it.
#[test]
fn a_copied_chunk_carries_no_dictionary_flag() {
    let cp = CParams { codec: Codec::Zstd, use_dict: true, ..CParams::default() };
    let mut cctx = CCtx::new(&Compression::plain(cp), 4, 4000, 1).unwrap();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let noise: Vec<u8> = (0..40_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let chunk = cctx.compress(&noise).unwrap();
    assert_ne!(chunk[2] & 0x02, 0, "incompressible data is stored as a copy");
    assert_eq!(chunk[31] & 0x01, 0, "a copy has no dictionary");
    assert_eq!(inflate_whole(&chunk, noise.len()).unwrap(), noise);
    // Data it compresses keeps its dictionary.
    let smooth: Vec<u8> = (0..40_000u32).flat_map(|i| (i / 7).to_le_bytes()).take(40_000).collect();
    let chunk = cctx.compress(&smooth).unwrap();
    assert_eq!(chunk[31] & 0x01, 0x01);
    assert_eq!(inflate_whole(&chunk, smooth.len()).unwrap(), smooth);
}

/// A chunk header with codec `format`/`udcodec`, `filters` and Blosc2 flags `flags2`.
fn header(format: u8, udcodec: u8, filters: [u8; 6], flags2: u8) -> Vec<u8> {
    let mut h = vec![0u8; 32];
    h[0] = 5;
    h[2] = 0x05 | (format << 5);
    h[16..22].copy_from_slice(&filters);
    h[22] = udcodec;
    h[31] = flags2;
    h
}

/// c-blosc2 3.x's repeated value wider than a header's typesize: the
/// whole value follows the header, cbytes gives its width, typesize
/// says 1. c-blosc2 2.15 would repeat its first byte.
#[test]
fn a_wide_repeated_value_fills_the_chunk() {
    let value: Vec<u8> = (1..=6).collect();
    let mut chunk = vec![0u8; 32];
    chunk[..4].copy_from_slice(&[5, 1, 0x05, 1]);
    chunk[4..8].copy_from_slice(&24i32.to_le_bytes()); // nbytes: 4 items
    chunk[8..12].copy_from_slice(&12i32.to_le_bytes()); // blocksize: 2 items
    chunk[12..16].copy_from_slice(&38i32.to_le_bytes()); // cbytes: header + value
    chunk[31] = (blosc2_sys::BLOSC2_SPECIAL_VALUE as u8) << 4;
    chunk.extend_from_slice(&value);
    assert_eq!(inflate_whole(&chunk, 24).unwrap(), value.repeat(4));
    let mut block = vec![0u8; 12];
    let mut dctx = super::chunk::DCtx::new(1).unwrap();
    dctx.decompress_block(&super::chunk::Chunk::from_slice(&chunk), 1, &mut block).unwrap();
    assert_eq!(block, value.repeat(2));
    // A value that does not divide the chunk is refused.
    chunk[12..16].copy_from_slice(&37i32.to_le_bytes());
    chunk.pop();
    assert!(inflate_whole(&chunk, 24).is_err());
}

#[test]
fn undecodable_features_are_named() {
    let refused = |h: &[u8]| check_decodable(h).unwrap_err().to_string();
    let shuffle = [0, 0, 0, 0, 0, filter::SHUFFLE];
    assert!(check_decodable(&header(4, 5, shuffle, 0)).is_ok());
    assert!(check_decodable(&header(6, codec::ZSTD, shuffle, 1)).is_ok());
    assert!(refused(&header(6, 32, shuffle, 0)).contains("codec NDLZ (id 32"));
    assert!(refused(&header(6, 35, shuffle, 0)).contains("codec ZFP_RATE (id 35"));
    assert!(refused(&header(6, 99, shuffle, 0)).contains("codec id 99"));
    assert!(refused(&header(0, 0, [1, 35, 0, 0, 0, 0], 0)).contains("filter BYTEDELTA (id 35"));
    assert!(refused(&header(0, 0, [0, 0, 0, 0, 0, 100], 0)).contains("filter id 100"));
    // The caller's own filters (160 and up) are c-blosc2's to run or to
    // fail on ("not found"); its own codecs decode once registered
    // (ctests/test_hardening.c round-trips through both), an
    // unregistered one is refused.
    assert!(check_decodable(&header(0, 0, [0, 0, 0, 0, 0, 200], 0)).is_ok());
    assert!(refused(&header(6, 200, shuffle, 0)).contains("codec id 200"));
    assert!(refused(&header(1, 1, shuffle, 1)).contains("dictionary with codec LZ4/LZ4HC"));
    assert!(refused(&header(6, codec::LZ4HC, shuffle, 1)).contains("dictionary with codec LZ4/LZ4HC"));
    // A special chunk (zeros) decodes whatever its codec fields say.
    assert!(check_decodable(&header(6, 32, shuffle, 0x10)).is_ok());
    let mut v6 = header(4, 5, shuffle, 0);
    v6[0] = 6;
    assert!(refused(&v6).contains("chunk format version 6 (variable-length blocks"));
    // Its own kind, and the feature in a few words (what `caterva verify` groups by).
    let feature = |h: &[u8]| match check_decodable(h) {
        Err(crate::Error::Unsupported { feature, reason }) => {
            assert!(!reason.starts_with("unsupported"), "{reason}");
            feature
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(feature(&header(0, 0, [1, 35, 0, 0, 0, 0], 0)), "filter BYTEDELTA");
    assert_eq!(feature(&header(6, 33, shuffle, 0)), "codec ZFP_ACC");
    assert_eq!(feature(&header(0, 0, [0, 0, 0, 0, 0, 100], 0)), "filter id 100");
    assert_eq!(feature(&header(1, 1, shuffle, 1)), "an LZ4/LZ4HC dictionary");
    assert_eq!(feature(&v6), "chunk format version 6");
    assert!(refused(&v6).starts_with("unsupported: the chunk uses chunk format version 6"), "{}", refused(&v6));
}

#[test]
fn chunk_typesizes_divide_the_item() {
    for itemsize in [1, 8, 255, 256, 300, 400, 509, 1021 * 3, 1 << 20] {
        let t = chunk_typesize(itemsize);
        assert!((1..=255).contains(&t) && itemsize % t == 0 && typesize_fits(itemsize, t), "{itemsize}: {t}");
    }
    assert_eq!(chunk_typesize(400), 200);
    assert!(typesize_fits(400, 1) && !typesize_fits(400, 3) && !typesize_fits(8, 1) && typesize_fits(8, 8));
}

/// Every codec id a file can record comes back as it was; the ids
/// c-blosc2 ships codecs under have names, and no other id does.
#[test]
fn codec_ids_round_trip() {
    for id in 0..=u8::MAX {
        let c = Codec::from_id(id);
        assert_eq!(c.id(), id);
        assert_eq!(matches!(c, Codec::Other(_)), codec::name(id).is_none(), "id {id}");
    }
    let named = [
        (Codec::BloscLz, blosc2_sys::BLOSC_BLOSCLZ, "blosclz"),
        (Codec::Lz4, blosc2_sys::BLOSC_LZ4, "lz4"),
        (Codec::Lz4hc, blosc2_sys::BLOSC_LZ4HC, "lz4hc"),
        (Codec::Zlib, blosc2_sys::BLOSC_ZLIB, "zlib"),
        (Codec::Zstd, blosc2_sys::BLOSC_ZSTD, "zstd"),
    ];
    for (c, id, name) in named {
        assert_eq!(Codec::from_id(id as u8), c);
        assert_eq!(c.id(), id as u8);
        assert_eq!(c.to_string(), name);
    }
    assert_eq!(Codec::from_id(3), Codec::Other(3));
    assert_eq!(Codec::from_id(32), Codec::Other(32));
    assert_eq!(Codec::Other(42).to_string(), "codec 42");
}

/// As codecs, for the filters of the pipeline.
#[test]
fn filter_ids_round_trip() {
    for id in 0..=u8::MAX {
        let f = Filter::from_id(id);
        assert_eq!(f.id(), id);
        assert_eq!(matches!(f, Filter::Other(_)), filter::describe(id, 0).is_none(), "id {id}");
    }
    let named = [
        (Filter::NoFilter, blosc2_sys::BLOSC_NOFILTER, "nofilter"),
        (Filter::Shuffle, blosc2_sys::BLOSC_SHUFFLE, "shuffle"),
        (Filter::BitShuffle, blosc2_sys::BLOSC_BITSHUFFLE, "bitshuffle"),
        (Filter::Delta, blosc2_sys::BLOSC_DELTA, "delta"),
        (Filter::TruncPrec, blosc2_sys::BLOSC_TRUNC_PREC, "trunc_prec"),
    ];
    for (f, id, name) in named {
        assert_eq!(Filter::from_id(id as u8), f);
        assert_eq!(f.id(), id as u8);
        assert_eq!(f.to_string(), name);
    }
    assert_eq!(Filter::from_id(35), Filter::Other(35));
    assert_eq!(Filter::Other(35).to_string(), "filter 35");
}

/// The four `BLOSC_*_SPLIT` values, and nothing else.
#[test]
fn split_mode_ids() {
    let modes = [
        (SplitMode::Always, blosc2_sys::BLOSC_ALWAYS_SPLIT),
        (SplitMode::Never, blosc2_sys::BLOSC_NEVER_SPLIT),
        (SplitMode::Auto, blosc2_sys::BLOSC_AUTO_SPLIT),
        (SplitMode::ForwardCompat, blosc2_sys::BLOSC_FORWARD_COMPAT_SPLIT),
    ];
    for (i, (mode, id)) in modes.into_iter().enumerate() {
        assert_eq!(id as usize, i + 1);
        assert_eq!(SplitMode::from_id(id as i32), Some(mode));
        assert_eq!(mode.id(), id as i32);
    }
    for bad in [0, 5, -1, i32::MIN, i32::MAX, 256] {
        assert_eq!(SplitMode::from_id(bad), None, "{bad}");
    }
    let e = super::split_mode(7).unwrap_err();
    assert!(matches!(&e, crate::Error::InvalidArgument(m) if m == "splitmode 7 is not a BLOSC_*_SPLIT value"), "{e:?}");
}

/// The defaults stay caterva 0.5's `CATERVA_CONFIG_DEFAULTS`, and become
/// c-blosc2's ids.
#[test]
fn default_cparams_to_blosc() {
    let d = CParams::default();
    assert_eq!((d.codec, d.codec_meta, d.clevel, d.use_dict, d.splitmode), (Codec::Zstd, 0, 5, false, SplitMode::Auto));
    assert_eq!(
        d.filters,
        [Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::NoFilter, Filter::Shuffle]
    );
    let cp = Compression::plain(CParams {
        codec: Codec::Other(40),
        splitmode: SplitMode::Never,
        filters: [
            Filter::Delta,
            Filter::Other(33),
            Filter::NoFilter,
            Filter::NoFilter,
            Filter::TruncPrec,
            Filter::BitShuffle,
        ],
        ..d
    })
    .to_blosc(8, 0, 1);
    assert_eq!(
        (cp.compcode, cp.splitmode, cp.filters),
        (40, blosc2_sys::BLOSC_NEVER_SPLIT as i32, [3, 33, 0, 0, 4, 2])
    );
}
