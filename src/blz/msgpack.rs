//! JSON values (bcolz attributes, `dflt`) as msgpack, the encoding
//! python-blosc2 gives vlmetalayers, and back. Floats stay floats (`NaN`
//! and the infinities too), integers integers.

use super::json::{Json, ObjectBuilder};
use crate::error::{Error, Result};

/// Encode `v` as msgpack.
///
/// # Errors
/// [`Error::InvalidArgument`] for an integer beyond 64 bits, which msgpack
/// cannot hold (python-blosc2 refuses to pack one too).
pub(crate) fn encode(v: &Json) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    put(&mut out, v)?;
    Ok(out)
}

fn put(out: &mut Vec<u8>, v: &Json) -> Result<()> {
    // Writing into a Vec cannot fail.
    match v {
        Json::Null => rmp::encode::write_nil(out).unwrap_or(()),
        Json::Bool(b) => rmp::encode::write_bool(out, *b).unwrap_or(()),
        Json::Int(i) => {
            if let Ok(i) = i64::try_from(*i) {
                let _ = rmp::encode::write_sint(out, i);
            } else if let Ok(u) = u64::try_from(*i) {
                let _ = rmp::encode::write_uint(out, u);
            } else {
                return Err(too_big(&i.to_string()));
            }
        }
        Json::BigInt(s) => return Err(too_big(s)),
        Json::Float(f) => {
            let _ = rmp::encode::write_f64(out, *f);
        }
        Json::Str(s) => {
            let _ = rmp::encode::write_str(out, s);
        }
        Json::Array(a) => {
            let _ = rmp::encode::write_array_len(out, a.len() as u32);
            for x in a {
                put(out, x)?;
            }
        }
        Json::Object(m) => {
            let _ = rmp::encode::write_map_len(out, m.len() as u32);
            for (k, x) in m {
                let _ = rmp::encode::write_str(out, k);
                put(out, x)?;
            }
        }
    }
    Ok(())
}

fn too_big(digits: &str) -> Error {
    Error::InvalidArgument(format!(
        "the integer {digits} is beyond 64 bits, which msgpack (and so a vlmetalayer) cannot hold"
    ))
}

/// Decode one msgpack value (nil, bool, integers, floats, str, arrays,
/// maps with string keys) into JSON.
///
/// # Errors
/// [`Error::InvalidFormat`] for anything else (bin, that is bytes, and
/// ext values: JSON has nothing to hold them) or trailing bytes.
pub(crate) fn decode(bytes: &[u8]) -> Result<Json> {
    let mut rd = bytes;
    let v = get(&mut rd, 0)?;
    if !rd.is_empty() {
        return Err(Error::InvalidFormat("msgpack value followed by other bytes".into()));
    }
    Ok(v)
}

fn take<'a>(rd: &mut &'a [u8], n: usize) -> Result<&'a [u8]> {
    if rd.len() < n {
        return Err(Error::InvalidFormat("truncated msgpack".into()));
    }
    let (a, b) = rd.split_at(n);
    *rd = b;
    Ok(a)
}

fn get(rd: &mut &[u8], depth: usize) -> Result<Json> {
    use rmp::Marker as M;
    if depth > 64 {
        return Err(Error::InvalidFormat("msgpack nested too deeply".into()));
    }
    let bad = || Error::InvalidFormat("unsupported msgpack value".into());
    let marker = rmp::decode::read_marker(rd).map_err(|_| Error::InvalidFormat("truncated msgpack".into()))?;
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
    let len = |rd: &mut &[u8], n: usize| -> Result<usize> { Ok(be(take(rd, n)?) as usize) };
    Ok(match marker {
        M::Null => Json::Null,
        M::True => Json::Bool(true),
        M::False => Json::Bool(false),
        M::FixPos(n) => Json::Int(i128::from(n)),
        M::FixNeg(n) => Json::Int(i128::from(n)),
        M::U8 => Json::Int(i128::from(be(take(rd, 1)?))),
        M::U16 => Json::Int(i128::from(be(take(rd, 2)?))),
        M::U32 => Json::Int(i128::from(be(take(rd, 4)?))),
        M::U64 => Json::Int(i128::from(be(take(rd, 8)?))),
        M::I8 => Json::Int(i128::from(be(take(rd, 1)?) as u8 as i8)),
        M::I16 => Json::Int(i128::from(be(take(rd, 2)?) as u16 as i16)),
        M::I32 => Json::Int(i128::from(be(take(rd, 4)?) as u32 as i32)),
        M::I64 => Json::Int(i128::from(be(take(rd, 8)?) as i64)),
        M::F32 => Json::Float(f64::from(f32::from_bits(be(take(rd, 4)?) as u32))),
        M::F64 => Json::Float(f64::from_bits(be(take(rd, 8)?))),
        M::FixStr(_) | M::Str8 | M::Str16 | M::Str32 => {
            let n = match marker {
                M::FixStr(n) => usize::from(n),
                M::Str8 => len(rd, 1)?,
                M::Str16 => len(rd, 2)?,
                _ => len(rd, 4)?,
            };
            let s = std::str::from_utf8(take(rd, n)?).map_err(|_| bad())?;
            Json::Str(s.to_owned())
        }
        M::Bin8 | M::Bin16 | M::Bin32 => {
            return Err(Error::InvalidFormat(
                "a msgpack bin value (bytes), which JSON (and so a bcolz attribute) cannot hold".into(),
            ))
        }
        M::FixArray(_) | M::Array16 | M::Array32 => {
            let n = match marker {
                M::FixArray(n) => usize::from(n),
                M::Array16 => len(rd, 2)?,
                _ => len(rd, 4)?,
            };
            if n > rd.len() {
                return Err(Error::InvalidFormat("truncated msgpack".into()));
            }
            let mut a = Vec::with_capacity(n);
            for _ in 0..n {
                a.push(get(rd, depth + 1)?);
            }
            Json::Array(a)
        }
        M::FixMap(_) | M::Map16 | M::Map32 => {
            let n = match marker {
                M::FixMap(n) => usize::from(n),
                M::Map16 => len(rd, 2)?,
                _ => len(rd, 4)?,
            };
            if n > rd.len() {
                return Err(Error::InvalidFormat("truncated msgpack".into()));
            }
            let mut m = ObjectBuilder::default();
            for _ in 0..n {
                let Json::Str(k) = get(rd, depth + 1)? else { return Err(bad()) };
                let v = get(rd, depth + 1)?;
                m.insert(k, v);
            }
            m.finish()
        }
        _ => return Err(bad()),
    })
}
