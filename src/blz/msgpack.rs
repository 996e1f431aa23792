//! JSON values (bcolz attributes, `dflt`) as msgpack, the encoding
//! python-blosc2 gives vlmetalayers, and back.

use serde_json::{Map, Number, Value};

use crate::error::{Error, Result};

/// Encode `v` as msgpack.
#[must_use]
pub fn encode(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    put(&mut out, v);
    out
}

fn put(out: &mut Vec<u8>, v: &Value) {
    // Writing into a Vec cannot fail.
    match v {
        Value::Null => rmp::encode::write_nil(out).unwrap_or(()),
        Value::Bool(b) => rmp::encode::write_bool(out, *b).unwrap_or(()),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                let _ = rmp::encode::write_sint(out, i);
            } else if let Some(u) = n.as_u64() {
                let _ = rmp::encode::write_uint(out, u);
            } else {
                let _ = rmp::encode::write_f64(out, n.as_f64().unwrap_or(f64::NAN));
            }
        }
        Value::String(s) => {
            let _ = rmp::encode::write_str(out, s);
        }
        Value::Array(a) => {
            let _ = rmp::encode::write_array_len(out, a.len() as u32);
            for x in a {
                put(out, x);
            }
        }
        Value::Object(m) => {
            let _ = rmp::encode::write_map_len(out, m.len() as u32);
            for (k, x) in m {
                let _ = rmp::encode::write_str(out, k);
                put(out, x);
            }
        }
    }
}

/// Decode one msgpack value (nil, bool, integers, floats, str, bin as a
/// list of bytes, arrays, maps with string keys) into JSON.
///
/// # Errors
/// [`Error::InvalidFormat`] for anything else or trailing bytes.
pub fn decode(bytes: &[u8]) -> Result<Value> {
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

fn get(rd: &mut &[u8], depth: usize) -> Result<Value> {
    use rmp::Marker as M;
    if depth > 64 {
        return Err(Error::InvalidFormat("msgpack nested too deeply".into()));
    }
    let bad = || Error::InvalidFormat("unsupported msgpack value".into());
    let marker = rmp::decode::read_marker(rd).map_err(|_| Error::InvalidFormat("truncated msgpack".into()))?;
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
    let len = |rd: &mut &[u8], n: usize| -> Result<usize> { Ok(be(take(rd, n)?) as usize) };
    Ok(match marker {
        M::Null => Value::Null,
        M::True => Value::Bool(true),
        M::False => Value::Bool(false),
        M::FixPos(n) => Value::from(n),
        M::FixNeg(n) => Value::from(n),
        M::U8 => Value::from(be(take(rd, 1)?)),
        M::U16 => Value::from(be(take(rd, 2)?)),
        M::U32 => Value::from(be(take(rd, 4)?)),
        M::U64 => Value::from(be(take(rd, 8)?)),
        M::I8 => Value::from(be(take(rd, 1)?) as u8 as i8),
        M::I16 => Value::from(be(take(rd, 2)?) as u16 as i16),
        M::I32 => Value::from(be(take(rd, 4)?) as u32 as i32),
        M::I64 => Value::from(be(take(rd, 8)?) as i64),
        M::F32 => {
            Number::from_f64(f64::from(f32::from_bits(be(take(rd, 4)?) as u32))).map_or(Value::Null, Value::Number)
        }
        M::F64 => Number::from_f64(f64::from_bits(be(take(rd, 8)?))).map_or(Value::Null, Value::Number),
        M::FixStr(_) | M::Str8 | M::Str16 | M::Str32 => {
            let n = match marker {
                M::FixStr(n) => usize::from(n),
                M::Str8 => len(rd, 1)?,
                M::Str16 => len(rd, 2)?,
                _ => len(rd, 4)?,
            };
            let s = std::str::from_utf8(take(rd, n)?).map_err(|_| bad())?;
            Value::String(s.to_owned())
        }
        M::Bin8 | M::Bin16 | M::Bin32 => {
            let n = match marker {
                M::Bin8 => len(rd, 1)?,
                M::Bin16 => len(rd, 2)?,
                _ => len(rd, 4)?,
            };
            Value::Array(take(rd, n)?.iter().map(|&b| Value::from(b)).collect())
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
            Value::Array(a)
        }
        M::FixMap(_) | M::Map16 | M::Map32 => {
            let n = match marker {
                M::FixMap(n) => usize::from(n),
                M::Map16 => len(rd, 2)?,
                _ => len(rd, 4)?,
            };
            let mut m = Map::new();
            for _ in 0..n {
                let Value::String(k) = get(rd, depth + 1)? else { return Err(bad()) };
                m.insert(k, get(rd, depth + 1)?);
            }
            Value::Object(m)
        }
        _ => return Err(bad()),
    })
}
