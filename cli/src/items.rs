//! Items as text, by NumPy dtype: integers, floats (shortest round-trip
//! form), complex numbers and booleans; anything else (structured dtypes,
//! strings, item sizes without a dtype) as the raw bytes in hex.

use std::fmt::Write;

/// How an item's bytes are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Signed,
    Unsigned,
    Float,
    Complex,
    Bool,
    /// `0x` and the bytes in storage order.
    Hex,
}

/// The text form of one array's items.
#[derive(Clone, Copy, Debug)]
pub struct ItemFormat {
    kind: Kind,
    big_endian: bool,
}

impl ItemFormat {
    /// The format for `dtype` (a NumPy dtype string) and `itemsize`-byte
    /// items: hex when there is no dtype or it is not a plain number type
    /// of that size.
    pub fn new(dtype: Option<&str>, itemsize: usize) -> ItemFormat {
        let hex = ItemFormat { kind: Kind::Hex, big_endian: false };
        let Some(d) = dtype else { return hex };
        let (big_endian, body) = match d.as_bytes().first() {
            Some(b'>') => (true, &d[1..]),
            Some(b'<' | b'|') => (false, &d[1..]),
            Some(b'=') => (cfg!(target_endian = "big"), &d[1..]),
            _ => (false, d),
        };
        let kind = match (body, itemsize) {
            ("i1" | "i2" | "i4" | "i8", _) => Kind::Signed,
            ("u1" | "u2" | "u4" | "u8", _) => Kind::Unsigned,
            ("f2" | "f4" | "f8", _) => Kind::Float,
            ("c8" | "c16", _) => Kind::Complex,
            ("b1" | "?", 1) => Kind::Bool,
            _ => return hex,
        };
        let size: Option<usize> = body[1..].parse().ok().or(Some(1));
        if size != Some(itemsize) {
            return hex;
        }
        ItemFormat { kind, big_endian }
    }

    /// Append the text of `item` to `out`.
    pub fn write(&self, item: &[u8], out: &mut String) {
        // Writing into a String cannot fail.
        let _ = match self.kind {
            Kind::Signed => write!(out, "{}", self.signed(item)),
            Kind::Unsigned => write!(out, "{}", self.unsigned(item)),
            Kind::Float => write!(out, "{:?}", self.float(item)),
            Kind::Complex => {
                let (re, im) = item.split_at(item.len() / 2);
                let im = self.float(im);
                let sign = if im.is_sign_negative() && !im.is_nan() { '-' } else { '+' };
                write!(out, "{:?}{sign}{:?}j", self.float(re), im.abs())
            }
            Kind::Bool => write!(out, "{}", item[0] != 0),
            Kind::Hex => {
                out.push_str("0x");
                item.iter().try_for_each(|b| write!(out, "{b:02x}"))
            }
        };
    }

    /// The item as an unsigned integer of its size.
    fn unsigned(&self, item: &[u8]) -> u64 {
        let fold = |acc: u64, b: &u8| acc << 8 | u64::from(*b);
        if self.big_endian {
            item.iter().fold(0, fold)
        } else {
            item.iter().rev().fold(0, fold)
        }
    }

    /// The item as a signed integer of its size (sign-extended).
    fn signed(&self, item: &[u8]) -> i64 {
        let shift = 64 - 8 * item.len() as u32;
        ((self.unsigned(item) << shift) as i64) >> shift
    }

    /// The item as a float of its size, widened to f64 (exactly).
    fn float(&self, item: &[u8]) -> Float {
        let bits = self.unsigned(item);
        match item.len() {
            2 => Float::F32(f16_to_f32(bits as u16)),
            4 => Float::F32(f32::from_bits(bits as u32)),
            _ => Float::F64(f64::from_bits(bits)),
        }
    }
}

/// A float printed in the shortest form that reads back to the same value
/// of its own width (`0.1`, not `0.10000000149011612`, for an f32).
#[derive(Clone, Copy)]
enum Float {
    F32(f32),
    F64(f64),
}

impl Float {
    fn is_sign_negative(self) -> bool {
        match self {
            Float::F32(x) => x.is_sign_negative(),
            Float::F64(x) => x.is_sign_negative(),
        }
    }

    fn is_nan(self) -> bool {
        match self {
            Float::F32(x) => x.is_nan(),
            Float::F64(x) => x.is_nan(),
        }
    }

    fn abs(self) -> Float {
        match self {
            Float::F32(x) => Float::F32(x.abs()),
            Float::F64(x) => Float::F64(x.abs()),
        }
    }
}

impl std::fmt::Debug for Float {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Float::F32(x) => write!(f, "{x:?}"),
            Float::F64(x) => write!(f, "{x:?}"),
        }
    }
}

/// An IEEE half-precision float as the f32 of the same value.
fn f16_to_f32(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f32::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f32.powi(-24),
        31 if frac == 0.0 => sign * f32::INFINITY,
        31 => f32::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f32.powi(exp - 15),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(dtype: Option<&str>, item: &[u8]) -> String {
        let mut s = String::new();
        ItemFormat::new(dtype, item.len()).write(item, &mut s);
        s
    }

    #[test]
    fn numbers_by_dtype() {
        assert_eq!(show(Some("<i8"), &(-5i64).to_le_bytes()), "-5");
        assert_eq!(show(Some("<i2"), &(-300i16).to_le_bytes()), "-300");
        assert_eq!(show(Some("|i1"), &[0xff]), "-1");
        assert_eq!(show(Some(">i4"), &(-7i32).to_be_bytes()), "-7");
        assert_eq!(show(Some("<u4"), &u32::MAX.to_le_bytes()), "4294967295");
        assert_eq!(show(Some("|u1"), &[200]), "200");
        assert_eq!(show(Some("<u8"), &u64::MAX.to_le_bytes()), "18446744073709551615");
        assert_eq!(show(Some("<f8"), &1.0f64.to_le_bytes()), "1.0");
        assert_eq!(show(Some("<f8"), &(-2.5e300f64).to_le_bytes()), "-2.5e300");
        assert_eq!(show(Some("<f4"), &0.1f32.to_le_bytes()), "0.1");
        assert_eq!(show(Some(">f8"), &f64::NAN.to_be_bytes()), "NaN");
        assert_eq!(show(Some("<f2"), &[0x00, 0x3c]), "1.0");
        assert_eq!(show(Some("<f2"), &[0x00, 0xc1]), "-2.5");
        assert_eq!(show(Some("<f2"), &[0x00, 0x7c]), "inf");
        assert_eq!(show(Some("<f2"), &[0x01, 0x00]), "5.9604645e-8");
        let c: Vec<u8> = [1.5f64, -2.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(show(Some("<c16"), &c), "1.5-2.0j");
        let c: Vec<u8> = [0f32, 3.0].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(show(Some("<c8"), &c), "0.0+3.0j");
        assert_eq!(show(Some("|b1"), &[1]), "true");
        assert_eq!(show(Some("?"), &[0]), "false");
    }

    #[test]
    fn hex_for_the_rest() {
        assert_eq!(show(None, &[1, 0xab, 0]), "0x01ab00");
        assert_eq!(show(None, &7u64.to_le_bytes()), "0x0700000000000000");
        assert_eq!(show(Some("|V3"), &[1, 2, 3]), "0x010203");
        assert_eq!(show(Some("<U1"), &[65, 0, 0, 0]), "0x41000000");
        assert_eq!(show(Some("[('a', '<i4')]"), &[1, 0, 0, 0]), "0x01000000");
        // A dtype that contradicts the item size is not trusted.
        assert_eq!(show(Some("<i8"), &[1, 0, 0, 0]), "0x01000000");
        assert_eq!(show(Some("<M8[ns]"), &[0, 0, 0, 0, 0, 0, 0, 1]), "0x0000000000000001");
    }
}
