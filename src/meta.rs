//! The `caterva` (and `b2nd`) metalayer codecs: msgpack via rmp, with fixed
//! integer widths so that the bytes match FORMAT.md exactly. Decoding is
//! bounds-checked, accepts any msgpack integer width (other writers may
//! choose shorter ones) and ignores trailing bytes (squeeze writes a shorter
//! encoding over a longer one).

use crate::error::{Error, Result};
use crate::geometry::MAX_DIM;

/// Name of the caterva metalayer.
pub(crate) const CATERVA_META: &str = "caterva";
/// Name of the b2nd metalayer (c-blosc2 ≥ 2.7, python-blosc2).
pub(crate) const B2ND_META: &str = "b2nd";
/// Version written in the caterva metalayer.
pub(crate) const METALAYER_VERSION: u8 = 0;

/// The geometry recorded in a `caterva` or `b2nd` metalayer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaGeometry {
    /// Shape, one entry per dimension.
    pub shape: Vec<i64>,
    /// Chunk shape.
    pub chunkshape: Vec<i32>,
    /// Block shape.
    pub blockshape: Vec<i32>,
    /// The NumPy dtype string (only in `b2nd`).
    pub dtype: Option<String>,
}

fn format_err(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::InvalidFormat(format!("metalayer: cannot decode {what}: {e:?}"))
}

fn write_sections(out: &mut Vec<u8>, n: u32, shape: &[i64], chunkshape: &[i32], blockshape: &[i32]) {
    // Writing to a Vec cannot fail, so the results are ignored.
    let _ = rmp::encode::write_array_len(out, n);
    rmp::encode::write_pfix(out, METALAYER_VERSION).ok();
    rmp::encode::write_pfix(out, shape.len() as u8).ok();
    let _ = rmp::encode::write_array_len(out, shape.len() as u32);
    for &s in shape {
        let _ = rmp::encode::write_i64(out, s);
    }
    for part in [chunkshape, blockshape] {
        let _ = rmp::encode::write_array_len(out, part.len() as u32);
        for &c in part {
            let _ = rmp::encode::write_i32(out, c);
        }
    }
}

fn check_lengths(shape: &[i64], chunkshape: &[i32], blockshape: &[i32]) -> Result<()> {
    if shape.len() > MAX_DIM || chunkshape.len() != shape.len() || blockshape.len() != shape.len() {
        return Err(Error::InvalidArgument(format!(
            "metalayer: shape, chunkshape and blockshape need the same length, at most {MAX_DIM}"
        )));
    }
    Ok(())
}

/// Encode the `caterva` metalayer (version 0).
///
/// # Errors
/// [`Error::InvalidArgument`] if the lengths differ or exceed [`MAX_DIM`].
pub(crate) fn encode_caterva(shape: &[i64], chunkshape: &[i32], blockshape: &[i32]) -> Result<Vec<u8>> {
    check_lengths(shape, chunkshape, blockshape)?;
    let mut out = Vec::with_capacity(4 + 17 * shape.len());
    write_sections(&mut out, 5, shape, chunkshape, blockshape);
    Ok(out)
}

/// Encode the `b2nd` metalayer: the caterva sections, then dtype format 0
/// (NumPy) and the dtype string as a msgpack str32.
///
/// # Errors
/// [`Error::InvalidArgument`] if the lengths differ or exceed [`MAX_DIM`].
pub(crate) fn encode_b2nd(shape: &[i64], chunkshape: &[i32], blockshape: &[i32], dtype: &str) -> Result<Vec<u8>> {
    check_lengths(shape, chunkshape, blockshape)?;
    let mut out = Vec::with_capacity(11 + 17 * shape.len() + dtype.len());
    write_sections(&mut out, 7, shape, chunkshape, blockshape);
    rmp::encode::write_pfix(&mut out, 0).ok();
    out.push(0xdb);
    out.extend_from_slice(&(dtype.len() as u32).to_be_bytes());
    out.extend_from_slice(dtype.as_bytes());
    Ok(out)
}

/// Room kept for the dtype string in a `b2nd` metalayer written by this
/// library, so that a dtype set after creation (up to this many bytes, or
/// the length of the dtype it was made with if longer) fits:
/// c-blosc2 metalayers never grow. The encoding is zero-padded; readers
/// decode from the front.
pub(crate) const DTYPE_RESERVE: usize = 64;

/// The dtype written when the caller gives none: the unsigned integer of
/// the item size, or raw bytes.
#[must_use]
pub fn default_dtype(itemsize: usize) -> String {
    match itemsize {
        1 => "|u1".into(),
        2 | 4 | 8 => format!("<u{itemsize}"),
        n => format!("|V{n}"),
    }
}

/// The longest dtype string: a record dtype's description grows with its
/// fields (python-blosc2 sets no limit; the metalayer is read whole at
/// every open).
pub(crate) const MAX_DTYPE_LEN: usize = 1 << 20;

/// Check a NumPy dtype string: 1 byte to 1 MiB, no control
/// characters, and for a simple type (`<f8`, `|u1`, `<U3`, `|V7`,
/// `<M8[ns]`…) an item size equal to `itemsize`. Structured dtypes (of any
/// description length) are taken as given.
///
/// # Errors
/// [`Error::InvalidArgument`] otherwise.
pub fn check_dtype(dtype: &str, itemsize: usize) -> Result<()> {
    if dtype.is_empty() || dtype.len() > MAX_DTYPE_LEN || dtype.chars().any(char::is_control) {
        let shown: String = dtype.chars().take(80).collect();
        return Err(Error::InvalidArgument(format!(
            "dtype '{shown}' must be 1 to {MAX_DTYPE_LEN} bytes without control characters"
        )));
    }
    let body = dtype.trim_start_matches(['<', '>', '|', '=']);
    let mut chars = body.chars();
    let Some(kind) = chars.next() else {
        return Err(Error::InvalidArgument(format!("dtype '{dtype}' has no type code")));
    };
    if body.starts_with('[') || body.starts_with('(') || body.starts_with('{') {
        return Ok(());
    }
    let digits: String = chars.as_str().chars().take_while(char::is_ascii_digit).collect();
    let size: Option<usize> = digits.parse().ok();
    let bytes = match (kind, size) {
        ('U', Some(n)) => n.checked_mul(4),
        ('b' | 'i' | 'u' | 'f' | 'c' | 'S' | 'V' | 'm' | 'M', Some(n)) => Some(n),
        ('?', None) => Some(1),
        _ => return Err(Error::InvalidArgument(format!("dtype '{dtype}' is not a NumPy dtype string"))),
    };
    if bytes != Some(itemsize) {
        return Err(Error::InvalidArgument(format!("dtype '{dtype}' does not describe items of {itemsize} bytes")));
    }
    Ok(())
}

/// The `b2nd` metalayer as this library stores it: [`encode_b2nd`],
/// zero-padded so that any dtype of up to [`DTYPE_RESERVE`] bytes fits later.
///
/// # Errors
/// As [`encode_b2nd`].
pub(crate) fn encode_b2nd_reserved(
    shape: &[i64],
    chunkshape: &[i32],
    blockshape: &[i32],
    dtype: &str,
) -> Result<Vec<u8>> {
    let mut out = encode_b2nd(shape, chunkshape, blockshape, dtype)?;
    out.resize(out.len() + DTYPE_RESERVE.saturating_sub(dtype.len()), 0);
    Ok(out)
}

/// Decode a `caterva` or `b2nd` metalayer. Returns the geometry and the
/// number of bytes consumed.
///
/// # Errors
/// [`Error::InvalidFormat`] on truncated or malformed input, an unknown
/// version, more than [`MAX_DIM`] dimensions or inconsistent lengths.
pub fn decode(bytes: &[u8]) -> Result<(MetaGeometry, usize)> {
    let mut rd = bytes;
    let n = rmp::decode::read_array_len(&mut rd).map_err(|e| format_err("header", e))?;
    if n != 5 && n != 7 {
        return Err(Error::InvalidFormat(format!("metalayer: expected 5 or 7 fields, found {n}")));
    }
    let version: u8 = rmp::decode::read_int(&mut rd).map_err(|e| format_err("version", e))?;
    if version > METALAYER_VERSION {
        return Err(Error::InvalidFormat(format!("metalayer: unsupported version {version}")));
    }
    let ndim: u8 = rmp::decode::read_int(&mut rd).map_err(|e| format_err("ndim", e))?;
    let ndim = usize::from(ndim);
    if ndim > MAX_DIM {
        return Err(Error::InvalidFormat(format!("metalayer: ndim {ndim} is larger than {MAX_DIM}")));
    }
    let mut read_section = |what: &str| -> Result<Vec<i64>> {
        let len = rmp::decode::read_array_len(&mut rd).map_err(|e| format_err(what, e))?;
        if len as usize != ndim {
            return Err(Error::InvalidFormat(format!("metalayer: {what} has {len} entries, ndim is {ndim}")));
        }
        (0..ndim).map(|_| rmp::decode::read_int::<i64, _>(&mut rd).map_err(|e| format_err(what, e))).collect()
    };
    let shape = read_section("shape")?;
    let to_i32 = |v: Vec<i64>, what: &str| -> Result<Vec<i32>> {
        v.into_iter()
            .map(|x| {
                i32::try_from(x).map_err(|_| Error::InvalidFormat(format!("metalayer: {what} entry {x} out of range")))
            })
            .collect()
    };
    let chunkshape = to_i32(read_section("chunkshape")?, "chunkshape")?;
    let blockshape = to_i32(read_section("blockshape")?, "blockshape")?;
    let mut dtype = None;
    if n == 7 {
        let _format: u8 = rmp::decode::read_int(&mut rd).map_err(|e| format_err("dtype format", e))?;
        let len = rmp::decode::read_str_len(&mut rd).map_err(|e| format_err("dtype", e))? as usize;
        if rd.len() < len {
            return Err(Error::InvalidFormat("metalayer: dtype string is truncated".into()));
        }
        let s = std::str::from_utf8(&rd[..len]).map_err(|e| format_err("dtype", e))?;
        dtype = Some(s.to_owned());
        rd = &rd[len..];
    }
    let used = bytes.len() - rd.len();
    Ok((MetaGeometry { shape, chunkshape, blockshape, dtype }, used))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: [u8; 44] = [
        0x95, 0x00, 0x02, 0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x0a, 0x92, 0xd2, 0, 0, 0,
        6, 0xd2, 0, 0, 0, 6, 0x92, 0xd2, 0, 0, 0, 4, 0xd2, 0, 0, 0, 4,
    ];

    #[test]
    fn format_md_example_bytes() {
        assert_eq!(encode_caterva(&[10, 10], &[6, 6], &[4, 4]).unwrap(), EXAMPLE);
        let (g, used) = decode(&EXAMPLE).unwrap();
        assert_eq!(used, 44);
        assert_eq!(
            g,
            MetaGeometry { shape: vec![10, 10], chunkshape: vec![6, 6], blockshape: vec![4, 4], dtype: None }
        );
    }

    #[test]
    fn zero_dim_and_trailing_bytes() {
        let e = encode_caterva(&[], &[], &[]).unwrap();
        assert_eq!(e, [0x95, 0, 0, 0x90, 0x90, 0x90]);
        let mut long = e.clone();
        long.extend_from_slice(&[0xd3, 1, 2, 3]);
        let (g, used) = decode(&long).unwrap();
        assert_eq!(used, 6);
        assert!(g.shape.is_empty());
    }

    #[test]
    fn b2nd_roundtrip() {
        let e = encode_b2nd(&[3, 0], &[2, 0], &[1, 0], "<f8").unwrap();
        assert_eq!(e[0], 0x97);
        assert_eq!(&e[e.len() - 9..], &[0, 0xdb, 0, 0, 0, 3, b'<', b'f', b'8']);
        let (g, used) = decode(&e).unwrap();
        assert_eq!(used, e.len());
        assert_eq!(g.dtype.as_deref(), Some("<f8"));
        assert_eq!(g.shape, vec![3, 0]);
    }

    #[test]
    fn dtypes() {
        assert_eq!(default_dtype(1), "|u1");
        assert_eq!(default_dtype(8), "<u8");
        assert_eq!(default_dtype(3), "|V3");
        for (d, n) in [("<f8", 8), ("|u1", 1), ("<i2", 2), ("<U3", 12), ("|V7", 7), ("<M8[ns]", 8), ("|b1", 1)] {
            assert!(check_dtype(d, n).is_ok(), "{d}");
        }
        for (d, n) in [("<f8", 4), ("", 1), ("x", 1), ("<f", 4), ("<i2\0", 2)] {
            assert!(check_dtype(d, n).is_err(), "{d}");
        }
        assert!(check_dtype("[('a', '<f4'), ('b', '<i4')]", 8).is_ok());
        let e = encode_b2nd_reserved(&[4], &[2], &[1], "<f8").unwrap();
        assert_eq!(e.len(), encode_b2nd(&[4], &[2], &[1], "<f8").unwrap().len() + DTYPE_RESERVE - 3);
        assert_eq!(decode(&e).unwrap().0.dtype.as_deref(), Some("<f8"));
    }

    #[test]
    fn short_integers_are_accepted() {
        // version, ndim 1, shape [5] as positive fixint, chunk [5], block [1]
        let (g, _) = decode(&[0x95, 0, 1, 0x91, 5, 0x91, 5, 0x91, 1]).unwrap();
        assert_eq!((g.shape, g.chunkshape, g.blockshape), (vec![5], vec![5], vec![1]));
    }

    #[test]
    fn every_truncation_fails_cleanly() {
        for len in 0..EXAMPLE.len() {
            assert!(decode(&EXAMPLE[..len]).is_err(), "prefix of {len} bytes decoded");
        }
    }

    #[test]
    fn malformed_inputs_fail() {
        assert!(decode(&[0x94, 0, 0, 0x90, 0x90]).is_err()); // 4 fields
        assert!(decode(&[0x95, 1, 0, 0x90, 0x90, 0x90]).is_err()); // version 1
        assert!(decode(&[0x95, 0, 9, 0x90, 0x90, 0x90]).is_err()); // ndim 9
        assert!(decode(&[0x95, 0, 1, 0x92, 1, 1, 0x91, 1, 0x91, 1]).is_err()); // 2 shapes for ndim 1
        assert!(decode(&[0x95, 0, 1, 0x91, 1, 0x91, 0xd3, 0, 0, 0, 1, 0, 0, 0, 0, 0x91, 1]).is_err()); // chunk > i32
        assert!(encode_caterva(&[1, 2], &[1], &[1]).is_err());
    }

    #[test]
    fn roundtrip_over_dims_and_extremes() {
        let values = [0i64, 1, 127, 128, 255, 65_536, i64::from(i32::MAX), i64::MAX];
        for ndim in 0..=MAX_DIM {
            let shape: Vec<i64> = (0..ndim).map(|i| values[i % values.len()]).collect();
            let chunks: Vec<i32> = (0..ndim).map(|i| [1, i32::MAX, 0, 300][i % 4]).collect();
            let blocks: Vec<i32> = (0..ndim).map(|i| [1, 17, 0, 2][i % 4]).collect();
            let e = encode_caterva(&shape, &chunks, &blocks).unwrap();
            assert_eq!(e.len(), 6 + 9 * ndim + 5 * 2 * ndim);
            let (g, used) = decode(&e).unwrap();
            assert_eq!(
                (g.shape, g.chunkshape, g.blockshape, g.dtype, used),
                (shape.clone(), chunks.clone(), blocks.clone(), None, e.len())
            );
            let b = encode_b2nd_reserved(&shape, &chunks, &blocks, "|V3").unwrap();
            let (g, _) = decode(&b).unwrap();
            assert_eq!((g.shape, g.dtype.as_deref()), (shape, Some("|V3")));
        }
        assert!(encode_caterva(&[1; MAX_DIM + 1], &[1; MAX_DIM + 1], &[1; MAX_DIM + 1]).is_err());
        assert!(encode_b2nd(&[1], &[1], &[1, 1], "|u1").is_err());
    }

    #[test]
    fn b2nd_truncations_and_bad_dtypes_fail_cleanly() {
        let e = encode_b2nd(&[6, 4], &[3, 4], &[1, 2], "<i4").unwrap();
        for len in 0..e.len() {
            assert!(decode(&e[..len]).is_err(), "prefix of {len} bytes decoded");
        }
        // A dtype string that is not UTF-8, or longer than the buffer.
        let mut bad = e.clone();
        let n = bad.len();
        bad[n - 1] = 0xff;
        assert!(decode(&bad).is_err());
        let mut long = e.clone();
        long[n - 4] = 9;
        assert!(decode(&long).is_err());
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        // A deterministic stream of byte strings, biased towards msgpack
        // array and integer markers; decoding must fail or succeed, never panic
        // or read out of bounds (Miri checks the latter).
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let markers =
            [0x95u8, 0x97, 0x90, 0x91, 0x92, 0xd0, 0xd2, 0xd3, 0xcc, 0xcf, 0xdb, 0xd9, 0xa3, 0x00, 0x08, 0xff];
        for _ in 0..300 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 48) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|i| {
                    let r = x.rotate_left(i as u32 * 5);
                    if r % 3 == 0 {
                        markers[(r >> 8) as usize % markers.len()]
                    } else {
                        (r >> 16) as u8
                    }
                })
                .collect();
            if let Ok((g, used)) = decode(&bytes) {
                assert!(used <= bytes.len());
                assert!(g.shape.len() <= MAX_DIM);
                assert!(g.shape.len() == g.chunkshape.len() && g.shape.len() == g.blockshape.len());
            }
        }
    }
}
