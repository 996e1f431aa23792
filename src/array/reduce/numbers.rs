//! What the items of a reduced array are, and how they are read and
//! accumulated: the item kinds of NumPy dtypes ([`Num`]), half-precision
//! conversions, complex values ([`C64`]), the domains sums run in
//! ([`Dom`], [`Real`]) and the readers of each item type ([`Read`]).

use crate::error::{invalid, Error, Result};

/// What an item is, from the array's dtype string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Num {
    Bool,
    Int(usize),
    UInt(usize),
    Float(usize),
    Complex(usize),
}

impl Num {
    /// NumPy's dtype string of items of this kind, native byte order.
    pub(super) fn typestr(self) -> String {
        let (kind, size) = match self {
            Num::Bool => ('b', 1),
            Num::Int(s) => ('i', s),
            Num::UInt(s) => ('u', s),
            Num::Float(s) => ('f', s),
            Num::Complex(s) => ('c', s),
        };
        let order = if size == 1 {
            '|'
        } else if cfg!(target_endian = "little") {
            '<'
        } else {
            '>'
        };
        format!("{order}{kind}{size}")
    }
}

/// The item kind of `dtype` and whether its bytes need swapping, or why it
/// cannot be reduced.
pub(super) fn parse_dtype(dtype: Option<&str>, itemsize: usize) -> Result<(Num, bool)> {
    let Some(dtype) = dtype else {
        invalid!("the array records no dtype (no 'b2nd' metalayer): reductions need to know what its items are")
    };
    let refuse = || {
        Error::InvalidArgument(format!(
            "dtype '{dtype}' cannot be reduced: only booleans, integers, floats and complex numbers can"
        ))
    };
    let (order, body) = match dtype.as_bytes().first() {
        Some(&c @ (b'<' | b'>' | b'|' | b'=')) => (c, &dtype[1..]),
        _ => (b'=', dtype),
    };
    let mut chars = body.chars();
    let kind = chars.next().ok_or_else(refuse)?;
    let size: usize = chars.as_str().parse().map_err(|_| refuse())?;
    let num = match (kind, size) {
        ('b', 1) => Num::Bool,
        ('i', 1 | 2 | 4 | 8) => Num::Int(size),
        ('u', 1 | 2 | 4 | 8) => Num::UInt(size),
        ('f', 2 | 4 | 8) => Num::Float(size),
        ('c', 8 | 16) => Num::Complex(size),
        _ => return Err(refuse()),
    };
    if size != itemsize {
        invalid!("dtype '{dtype}' has {size}-byte items, the array {itemsize}-byte ones");
    }
    let big = cfg!(target_endian = "big");
    let swap = size > 1 && ((order == b'<' && big) || (order == b'>' && !big));
    Ok((num, swap))
}

/// A half-precision float's value.
pub(super) fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        0x1f if frac == 0.0 => sign * f64::INFINITY,
        0x1f => f64::NAN,
        _ => sign * (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    }
}

/// `v` rounded to the nearest half-precision float (ties to even).
pub(super) fn f64_to_f16(v: f64) -> u16 {
    // Through f32 is not exact (double rounding), so round from f64 itself.
    let sign: u16 = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs();
    if a.is_nan() {
        return 0x7e00;
    }
    if a >= 65520.0 {
        return sign | 0x7c00;
    }
    if a < 2f64.powi(-14) {
        // Subnormal: a multiple of 2^-24, rounded half to even.
        let m = a * 2f64.powi(24);
        return sign | round_even(m) as u16;
    }
    let e = a.log2().floor() as i32;
    // log2 may be off by one next to a power of two.
    let e = if 2f64.powi(e) > a {
        e - 1
    } else if 2f64.powi(e + 1) <= a {
        e + 1
    } else {
        e
    };
    let m = round_even(a / 2f64.powi(e - 10)) as u32; // 1024..=2048
    let (e, m) = if m == 2048 { (e + 1, 1024) } else { (e, m) };
    if e > 15 {
        return sign | 0x7c00;
    }
    sign | (((e + 15) as u16) << 10) | (m - 1024) as u16
}

/// `x` rounded to an integer, ties to even.
fn round_even(x: f64) -> f64 {
    let r = x.round();
    if (r - x).abs() == 0.5 && r % 2.0 != 0.0 {
        r - x.signum()
    } else {
        r
    }
}

/// A complex value, accumulated in f64.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct C64 {
    pub(super) re: f64,
    pub(super) im: f64,
}

/// What an item is read as for computing.
pub(super) trait Dom: Copy + Send + Sync + 'static {
    /// The running sum of `sum`: wrapping integers, f64, complex.
    const ZERO: Self;
    /// The type of the mean's running sum.
    type M: Dom;
    fn add(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    fn nonzero(self) -> bool;
    fn to_m(self) -> Self::M;
}

/// Items that are ordered and have a real value: not complex.
pub(super) trait Real: Dom<M = f64> + PartialOrd {
    const MIN_INIT: Self;
    const MAX_INIT: Self;
    fn to_f64(self) -> f64;
    /// NaN, for floats.
    fn nan() -> Option<Self> {
        None
    }
}

/// The accumulators of integer sums: wrapping, as NumPy's int64/uint64 sums.
macro_rules! integer_accumulator {
    ($($t:ty),*) => {$(
        impl Dom for $t {
            const ZERO: Self = 0;
            type M = f64;
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn is_nan(self) -> bool {
                false
            }
            fn nonzero(self) -> bool {
                self != 0
            }
            fn to_m(self) -> f64 {
                self as f64
            }
        }
        impl Real for $t {
            const MIN_INIT: Self = <$t>::MAX;
            const MAX_INIT: Self = <$t>::MIN;
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
integer_accumulator!(i64, u64);

impl Dom for f64 {
    const ZERO: Self = 0.0;
    type M = f64;
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn nonzero(self) -> bool {
        self != 0.0
    }
    fn to_m(self) -> f64 {
        self
    }
}
impl Real for f64 {
    const MIN_INIT: Self = f64::INFINITY;
    const MAX_INIT: Self = f64::NEG_INFINITY;
    fn to_f64(self) -> f64 {
        self
    }
    fn nan() -> Option<Self> {
        Some(f64::NAN)
    }
}
impl Dom for C64 {
    const ZERO: Self = C64 { re: 0.0, im: 0.0 };
    type M = C64;
    fn add(self, o: Self) -> Self {
        C64 { re: self.re + o.re, im: self.im + o.im }
    }
    fn is_nan(self) -> bool {
        self.re.is_nan() || self.im.is_nan()
    }
    fn nonzero(self) -> bool {
        self.re != 0.0 || self.im != 0.0
    }
    fn to_m(self) -> C64 {
        self
    }
}

/// How to read an item of one dtype (native byte order) as its [`Dom`].
pub(super) trait Read: Send + Sync + 'static {
    type D: Dom;
    const N: usize;
    fn get(b: &[u8]) -> Self::D;
}

macro_rules! reader {
    ($name:ident, $t:ty, $d:ty, |$v:ident| $conv:expr) => {
        pub(super) struct $name;
        impl Read for $name {
            type D = $d;
            const N: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn get(b: &[u8]) -> $d {
                let $v = <$t>::from_ne_bytes(b[..Self::N].try_into().expect("N bytes"));
                $conv
            }
        }
    };
}
reader!(RBool, u8, u64, |v| u64::from(v != 0));
reader!(RI8, i8, i64, |v| i64::from(v));
reader!(RI16, i16, i64, |v| i64::from(v));
reader!(RI32, i32, i64, |v| i64::from(v));
reader!(RI64, i64, i64, |v| v);
reader!(RU8, u8, u64, |v| u64::from(v));
reader!(RU16, u16, u64, |v| u64::from(v));
reader!(RU32, u32, u64, |v| u64::from(v));
reader!(RU64, u64, u64, |v| v);
reader!(RF16, u16, f64, |v| f16_to_f64(v));
reader!(RF32, f32, f64, |v| f64::from(v));
reader!(RF64, f64, f64, |v| v);

macro_rules! complex_reader {
    ($name:ident, $t:ty) => {
        pub(super) struct $name;
        impl Read for $name {
            type D = C64;
            const N: usize = 2 * std::mem::size_of::<$t>();
            #[inline(always)]
            fn get(b: &[u8]) -> C64 {
                let h = Self::N / 2;
                let re = <$t>::from_ne_bytes(b[..h].try_into().expect("h bytes"));
                let im = <$t>::from_ne_bytes(b[h..Self::N].try_into().expect("h bytes"));
                C64 { re: f64::from(re), im: f64::from(im) }
            }
        }
    };
}
complex_reader!(RC8, f32);
complex_reader!(RC16, f64);

/// The items of a C-order row of `R`s.
pub(super) fn items<R: Read>(row: &[u8]) -> impl Iterator<Item = R::D> + '_ {
    row.chunks_exact(R::N).map(R::get)
}

/// The sum of a row and how many items it counted (NaN skipped with
/// `SKIP`), with four running sums (a shorter dependency chain, and a
/// little pairwise rounding).
#[inline]
pub(super) fn row_sum<R: Read, const SKIP: bool>(row: &[u8]) -> (<R::D as Dom>::M, u64) {
    type M<R> = <<R as Read>::D as Dom>::M;
    let mut acc = [<M<R> as Dom>::ZERO; 4];
    let mut n = 0u64;
    let mut quads = row.chunks_exact(4 * R::N);
    for q in &mut quads {
        for (k, a) in acc.iter_mut().enumerate() {
            let x = R::get(&q[k * R::N..]);
            if SKIP && x.is_nan() {
                continue;
            }
            *a = a.add(x.to_m());
            n += 1;
        }
    }
    let mut tail = <M<R> as Dom>::ZERO;
    for x in items::<R>(quads.remainder()) {
        if SKIP && x.is_nan() {
            continue;
        }
        tail = tail.add(x.to_m());
        n += 1;
    }
    (acc[0].add(acc[1]).add(acc[2].add(acc[3])).add(tail), n)
}
