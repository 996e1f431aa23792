//! The item size of a NumPy dtype written as text, by NumPy's own rules:
//! what `np.dtype(text).itemsize` gives, for every form the files we read
//! record (`dtype.str`, `str(dtype)`, `repr(dtype.descr)`, a type's name):
//!
//! - a typestr, its byte-order mark optional (`<`, `>`, `=`, `!`, or `|`,
//!   which NumPy writes for 1-byte and byte-string types and leaves out in
//!   `str(dtype)` of a record: `u1`, `i1`, `?`, `S3`): `<f8`, `b1`, `S3`
//!   (3 bytes), `U3` (4 bytes a character), `V8`, `M8[ns]`, a character
//!   code (`d`, `?`, `B`), a type's name (`int64`, `float32`, `bool`), with
//!   a subarray prefix (`(2,3)<f4`);
//! - a record's description, a list of fields `(name, type[, shape])`
//!   (the name may be a `(title, name)` pair, the type a nested
//!   description, the shape an integer or a tuple), or the
//!   `{'names': ..., 'formats': ..., 'offsets': ..., 'itemsize': ...}` form
//!   `str(dtype)` gives for records with padding;
//! - a subarray type `(type, shape)`.
//!
//! Character codes whose size depends on the platform (`l`, `L`, `p`, `P`,
//! `g`, `G`, `int`, `long`) take their sizes on 64-bit Linux and macOS, where
//! the files we read are written (on Windows NumPy 1.x makes `l` 4 bytes).
//! Object types (`O`) have no fixed-size items: `None`.

/// The item size of NumPy dtype `dtype` (see the module docs); `None` when
/// the text is not a dtype NumPy would take, or holds objects.
#[must_use]
pub(crate) fn itemsize(dtype: &str) -> Option<usize> {
    let t = dtype.trim();
    if !t.starts_with(['[', '(', '{', '\'', '"']) {
        return typestr(t);
    }
    let mut p = Parser { s: t.as_bytes(), at: 0 };
    match p.value() {
        Some(value) if p.peek().is_none() => size_of(&value),
        // `(2,3)<f4`: a typestr with a subarray prefix, not a tuple.
        _ if t.starts_with('(') => typestr(t),
        _ => None,
    }
}

/// A Python literal, as dtype descriptions are written.
#[derive(Debug)]
enum Lit {
    Str(String),
    Int(usize),
    List(Vec<Lit>),
    Tuple(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

/// The item size a literal describes as a dtype.
fn size_of(v: &Lit) -> Option<usize> {
    match v {
        Lit::Str(s) => typestr(s),
        Lit::List(fields) => fields.iter().try_fold(0usize, |total, f| total.checked_add(field(f)?)),
        // `(type, shape)`: a subarray.
        Lit::Tuple(t) => match t.as_slice() {
            [base, shape] => size_of(base)?.checked_mul(count(shape)?),
            _ => None,
        },
        Lit::Dict(entries) => dict(entries),
        Lit::Int(_) => None,
    }
}

/// A field `(name, type[, shape])`.
fn field(f: &Lit) -> Option<usize> {
    let Lit::Tuple(t) = f else { return None };
    let (name, ty, shape) = match t.as_slice() {
        [name, ty] => (name, ty, None),
        [name, ty, shape] => (name, ty, Some(shape)),
        _ => return None,
    };
    // A name, or a (title, name) pair.
    match name {
        Lit::Str(_) => {}
        Lit::Tuple(pair) if pair.len() == 2 && pair.iter().all(|x| matches!(x, Lit::Str(_))) => {}
        _ => return None,
    }
    let size = size_of(ty)?;
    match shape {
        None => Some(size),
        Some(shape) => size.checked_mul(count(shape)?),
    }
}

/// The items of a subarray shape: an integer or a tuple of them.
fn count(shape: &Lit) -> Option<usize> {
    match shape {
        Lit::Int(n) => Some(*n),
        Lit::Tuple(dims) => dims.iter().try_fold(1usize, |n, d| match d {
            Lit::Int(d) => n.checked_mul(*d),
            _ => None,
        }),
        _ => None,
    }
}

/// `{'names': [...], 'formats': [...], 'offsets': [...], 'itemsize': n}`:
/// the item size given, else the end of the last field.
fn dict(entries: &[(Lit, Lit)]) -> Option<usize> {
    let get = |key: &str| entries.iter().find(|(k, _)| matches!(k, Lit::Str(s) if s == key)).map(|(_, v)| v);
    if let Some(size) = get("itemsize") {
        return match size {
            Lit::Int(n) => Some(*n),
            _ => None,
        };
    }
    let (Some(Lit::List(formats)), Some(Lit::List(_))) = (get("formats"), get("names")) else { return None };
    let sizes = formats.iter().map(size_of).collect::<Option<Vec<usize>>>()?;
    match get("offsets") {
        None => sizes.iter().try_fold(0usize, |t, &s| t.checked_add(s)),
        Some(Lit::List(offsets)) if offsets.len() == sizes.len() => {
            offsets.iter().zip(&sizes).try_fold(0usize, |end, (o, &s)| match o {
                Lit::Int(o) => Some(end.max(o.checked_add(s)?)),
                _ => None,
            })
        }
        _ => None,
    }
}

/// The size of a typestr, a character code or a type's name.
fn typestr(text: &str) -> Option<usize> {
    let t = text.trim();
    // A subarray prefix: `(2,3)<f4`.
    if let Some(rest) = t.strip_prefix('(') {
        let (dims, base) = rest.split_once(')')?;
        let n = dims
            .split(',')
            .filter(|d| !d.trim().is_empty())
            .try_fold(1usize, |n, d| n.checked_mul(d.trim().parse().ok()?))?;
        return typestr(base)?.checked_mul(n);
    }
    if let Some(size) = named(t) {
        return Some(size);
    }
    let body = t.strip_prefix(['<', '>', '=', '|', '!']).unwrap_or(t);
    let mut chars = body.chars();
    let kind = chars.next()?;
    let rest = chars.as_str();
    if rest.is_empty() {
        return code(kind);
    }
    let digits_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    let (digits, tail) = rest.split_at(digits_len);
    let n: usize = digits.parse().ok()?;
    // Only dates and durations take a unit (`M8[ns]`).
    let unit = tail.is_empty() || (matches!(kind, 'M' | 'm') && tail.starts_with('[') && tail.ends_with(']'));
    if !unit {
        return None;
    }
    let ok = match kind {
        'b' => n == 1,
        'i' | 'u' => [1, 2, 4, 8].contains(&n),
        'f' => [2, 4, 8, 12, 16].contains(&n),
        'c' => [8, 16, 24, 32].contains(&n),
        'M' | 'm' => n == 8,
        'S' | 'a' | 'V' => true,
        'U' => return n.checked_mul(4),
        _ => false,
    };
    ok.then_some(n)
}

/// A one-character code without a size (NumPy's `dtype.char`); the
/// flexible ones (`S`, `U`, `V`) are 0 bytes, as in NumPy.
fn code(c: char) -> Option<usize> {
    Some(match c {
        '?' | 'b' | 'B' => 1,
        'h' | 'H' | 'e' => 2,
        'i' | 'I' | 'f' => 4,
        'l' | 'L' | 'q' | 'Q' | 'p' | 'P' | 'd' | 'F' | 'M' | 'm' => 8,
        'g' | 'D' => 16,
        'G' => 32,
        'S' | 'a' | 'U' | 'V' => 0,
        _ => return None,
    })
}

/// The size of a type given by its NumPy name.
fn named(name: &str) -> Option<usize> {
    let base = name.split('[').next().unwrap_or(name);
    if base != name && !matches!(base, "datetime64" | "timedelta64") {
        return None;
    }
    Some(match base {
        "bool" | "bool_" | "int8" | "uint8" | "byte" | "ubyte" => 1,
        "int16" | "uint16" | "short" | "ushort" | "float16" | "half" => 2,
        "int32" | "uint32" | "intc" | "uintc" | "float32" | "single" => 4,
        "int64" | "uint64" | "int" | "long" | "ulong" | "longlong" | "ulonglong" | "intp" | "uintp" | "float64"
        | "float" | "double" | "complex64" | "csingle" | "datetime64" | "timedelta64" => 8,
        "complex128" | "complex" | "cdouble" | "float128" | "longdouble" => 16,
        "complex256" | "clongdouble" => 32,
        _ => return None,
    })
}

/// A recursive-descent reader of the Python literals dtype descriptions
/// are written in: strings (no escapes: names and typestrs have none),
/// integers, lists, tuples and dictionaries.
struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.at).copied()
    }

    /// Take `c` if it comes next (after whitespace).
    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.at += usize::from(hit);
        hit
    }

    fn value(&mut self) -> Option<Lit> {
        match self.peek()? {
            b'[' => {
                self.at += 1;
                Some(Lit::List(self.items(b']')?))
            }
            b'(' => {
                self.at += 1;
                Some(Lit::Tuple(self.items(b')')?))
            }
            b'{' => {
                self.at += 1;
                let mut entries = Vec::new();
                while !self.eat(b'}') {
                    let key = self.value()?;
                    if !self.eat(b':') {
                        return None;
                    }
                    entries.push((key, self.value()?));
                    if !self.eat(b',') {
                        return self.eat(b'}').then_some(Lit::Dict(entries));
                    }
                }
                Some(Lit::Dict(entries))
            }
            q @ (b'\'' | b'"') => {
                let len = self.s[self.at + 1..].iter().position(|&c| c == q || c == b'\\')?;
                let body = std::str::from_utf8(&self.s[self.at + 1..self.at + 1 + len]).ok()?.to_owned();
                if self.s[self.at + 1 + len] != q {
                    return None;
                }
                self.at += len + 2;
                Some(Lit::Str(body))
            }
            c if c.is_ascii_digit() => {
                let len = self.s[self.at..].iter().take_while(|c| c.is_ascii_digit()).count();
                let n = std::str::from_utf8(&self.s[self.at..self.at + len]).ok()?.parse().ok()?;
                self.at += len;
                Some(Lit::Int(n))
            }
            _ => None,
        }
    }

    /// Values separated by commas (a trailing one allowed) up to `close`.
    fn items(&mut self, close: u8) -> Option<Vec<Lit>> {
        let mut items = Vec::new();
        while !self.eat(close) {
            items.push(self.value()?);
            if !self.eat(b',') {
                return self.eat(close).then_some(items);
            }
        }
        Some(items)
    }
}

#[cfg(test)]
mod tests {
    use super::itemsize;

    #[test]
    fn typestrs_with_and_without_a_byte_order_mark() {
        for (d, n) in [
            ("<f8", 8),
            (">i2", 2),
            ("=u4", 4),
            ("!i8", 8),
            ("|u1", 1),
            ("u1", 1),
            ("i1", 1),
            ("|i1", 1),
            ("?", 1),
            ("|b1", 1),
            ("b1", 1),
            ("S3", 3),
            ("|S3", 3),
            ("a5", 5),
            ("U3", 12),
            ("<U3", 12),
            ("V8", 8),
            ("|V8", 8),
            ("<M8[ns]", 8),
            ("m8[s]", 8),
            ("M8", 8),
            ("<c16", 16),
            ("f2", 2),
            ("<f16", 16),
            ("d", 8),
            ("B", 1),
            ("h", 2),
            ("e", 2),
            ("D", 16),
            ("S", 0),
            ("int64", 8),
            ("uint8", 1),
            ("bool", 1),
            ("float32", 4),
            ("complex128", 16),
            ("datetime64[ns]", 8),
            ("(2,3)<f4", 24),
            ("(2,)u1", 2),
        ] {
            assert_eq!(itemsize(d), Some(n), "{d}");
        }
        for bad in ["", "<", "O", "|O", "<O8", "i3", "f5", "b2", "<i4x", "<i4[ns]", "int65", "x1", "M4", "float64[ns]"]
        {
            assert_eq!(itemsize(bad), None, "{bad}");
        }
    }

    #[test]
    fn records() {
        for (d, n) in [
            ("[('a', '<i4'), ('b', '<f8')]", Some(12)),
            ("[('a','<i4'),('b','<f8',(3,)),('c','|S3')]", Some(31)),
            // str(dtype) of a record leaves out '|' on 1-byte and byte-string fields.
            ("[('a', 'u1'), ('b', 'i1'), ('c', '?'), ('d', 'S3'), ('e', '|u1')]", Some(7)),
            ("[('a', '<i4'), ('b', '<f8', (2, 3))]", Some(52)),
            ("[('f', '<f4', (2,3))]", Some(24)),
            ("[('a', '<i4'), ('b', '<f8', 2)]", Some(20)),
            ("[('p', [('x', '<f4'), ('y', '<f4')]), ('t', '<M8[ns]')]", Some(16)),
            ("[('n', [('x', 'u1'), ('y', [('z', 'S2')], (2,))])]", Some(5)),
            ("[('u', '<U3'), ('v', 'V8')]", Some(20)),
            ("[(('title', 'a'), '<i4'), ('b', 'u1')]", Some(5)),
            ("[('', '|V4'), ('x', '<f8')]", Some(12)),
            ("[('a', 'int64'), ('b', 'bool')]", Some(9)),
            ("[]", Some(0)),
            ("[('a', '<i4'),]", Some(4)),
            ("{'names': ['a', 'b'], 'formats': ['u1', '<i4'], 'offsets': [0, 4], 'itemsize': 8}", Some(8)),
            ("{'names': ['a', 'b'], 'formats': ['u1', '<i4'], 'offsets': [0, 4]}", Some(8)),
            ("{'names': ['a', 'b'], 'formats': ['u1', '<i4']}", Some(5)),
            ("('<f4', (2, 3))", Some(24)),
            ("('u1', 4)", Some(4)),
            ("'<f8'", Some(8)),
            ("[('a', '<i4'), ('b', '<f8'", None),
            ("[('a', '|O')]", None),
            ("[('a', '<i4')] x", None),
            ("[('a', '<i4', (2,)]", None),
            ("[('a', 'i3')]", None),
            ("[(1, '<i4')]", None),
        ] {
            assert_eq!(itemsize(d), n, "{d}");
        }
    }
}
