//! JSON as Python's `json` module reads and writes it, which is what bcolz
//! and bloscpack use: `NaN`, `Infinity` and `-Infinity` are numbers,
//! integers have no size limit, and bcolz decodes its files as ASCII
//! (`json.dumps(..., ensure_ascii=True)`), so everything written here
//! escapes non-ASCII characters as `\uXXXX`.
//!
//! serde_json refuses the non-finite numbers and cannot hold them in a
//! [`serde_json::Value`], hence this small layer.

use std::fmt::Write as _;

use serde_json::Value;

use crate::error::{Error, Result};

/// Deepest nesting parsed (Python's own limit is about 1000; bcolz attributes are shallow).
const MAX_DEPTH: usize = 128;

/// Attributes: names and values, in their file's order.
pub type Attributes = Vec<(String, Json)>;

/// A JSON value as Python's `json` reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer within `i64` or `u64` (what msgpack holds).
    Int(i128),
    /// An integer beyond 64 bits, as its decimal digits (Python's ints are unbounded).
    BigInt(String),
    /// A float, `NaN` and the infinities included.
    Float(f64),
    /// A string.
    Str(String),
    /// A list.
    Array(Vec<Json>),
    /// An object, its keys in the order of the text (a repeated key keeps
    /// its first place and its last value, as Python's `dict` does).
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of key `k` of an object.
    #[must_use]
    pub fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Object(m) => m.iter().find(|(n, _)| n == k).map(|(_, v)| v),
            _ => None,
        }
    }

    /// Whether this is `null`.
    #[must_use]
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    /// Convert a [`serde_json::Value`] (which holds no non-finite floats).
    #[must_use]
    pub fn from_value(v: &Value) -> Json {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => Json::Int(i128::from(i)),
                (_, Some(u)) => Json::Int(i128::from(u)),
                _ => Json::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(a) => Json::Array(a.iter().map(Json::from_value).collect()),
            Value::Object(m) => Json::Object(m.iter().map(|(k, v)| (k.clone(), Json::from_value(v))).collect()),
        }
    }

    /// A [`serde_json::Value`] for display (`caterva info --json`): the
    /// non-finite floats become the strings `"NaN"`, `"Infinity"` and
    /// `"-Infinity"`, integers beyond 64 bits their digits as a string.
    #[must_use]
    pub fn to_value_lossy(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Int(i) => i64::try_from(*i)
                .map(Value::from)
                .or_else(|_| u64::try_from(*i).map(Value::from))
                .unwrap_or(Value::Null),
            Json::BigInt(s) => Value::String(s.clone()),
            Json::Float(f) => {
                serde_json::Number::from_f64(*f).map_or_else(|| Value::String(float_token(*f)), Value::Number)
            }
            Json::Str(s) => Value::String(s.clone()),
            Json::Array(a) => Value::Array(a.iter().map(Json::to_value_lossy).collect()),
            Json::Object(m) => Value::Object(m.iter().map(|(k, v)| (k.clone(), v.to_value_lossy())).collect()),
        }
    }

    /// The text Python's `json.dumps(v, ensure_ascii=True)` gives (up to
    /// the spelling of floats, which round-trip exactly): ASCII only,
    /// `NaN`, `Infinity` and `-Infinity` for the non-finite floats.
    #[must_use]
    pub fn to_ascii(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Json::BigInt(s) => out.push_str(s),
            Json::Float(f) => out.push_str(&float_token(*f)),
            Json::Str(s) => write_str(out, s),
            Json::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    x.write(out);
                }
                out.push(']');
            }
            Json::Object(m) => {
                out.push('{');
                for (i, (k, x)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    write_str(out, k);
                    out.push_str(": ");
                    x.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// The entries of an object as they are read: a repeated key keeps its
/// first place and takes the last value (Python's `dict`), in linear time.
#[derive(Default)]
pub(crate) struct ObjectBuilder {
    entries: Vec<(String, Json)>,
    index: std::collections::HashMap<String, usize>,
}

impl ObjectBuilder {
    pub(crate) fn insert(&mut self, k: String, v: Json) {
        match self.index.get(&k) {
            Some(&i) => self.entries[i].1 = v,
            None => {
                self.index.insert(k.clone(), self.entries.len());
                self.entries.push((k, v));
            }
        }
    }

    pub(crate) fn finish(self) -> Json {
        Json::Object(self.entries)
    }
}

/// A float as Python's `json` writes it (a finite one as the shortest
/// text that reads back the same, always with a `.` or an exponent so
/// that it stays a float).
fn float_token(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        let s = format!("{f:?}");
        if s.contains(['.', 'e', 'E']) {
            s
        } else {
            format!("{s}.0")
        }
    }
}

fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Parse `text` as Python's `json.loads` does.
///
/// # Errors
/// [`Error::InvalidFormat`] (saying where) for text that is not JSON.
pub(crate) fn parse(text: &[u8]) -> Result<Json> {
    let mut p = Parser { s: text, at: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    if p.at != p.s.len() {
        return Err(p.err("extra data after the value"));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn err(&self, what: &str) -> Error {
        Error::InvalidFormat(format!("{what} at byte {}", self.at))
    }

    fn ws(&mut self) {
        while self.s.get(self.at).is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn eat(&mut self, word: &str) -> bool {
        if self.s[self.at..].starts_with(word.as_bytes()) {
            self.at += word.len();
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Json> {
        if depth > MAX_DEPTH {
            return Err(self.err("nested too deeply"));
        }
        let Some(&b) = self.s.get(self.at) else { return Err(self.err("a value expected")) };
        match b {
            b'{' => {
                self.at += 1;
                let mut m = ObjectBuilder::default();
                self.ws();
                if self.eat("}") {
                    return Ok(m.finish());
                }
                loop {
                    self.ws();
                    if self.s.get(self.at) != Some(&b'"') {
                        return Err(self.err("a string key expected"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if !self.eat(":") {
                        return Err(self.err("':' expected"));
                    }
                    self.ws();
                    let v = self.value(depth + 1)?;
                    m.insert(k, v);
                    self.ws();
                    if self.eat("}") {
                        return Ok(m.finish());
                    }
                    if !self.eat(",") {
                        return Err(self.err("',' or '}' expected"));
                    }
                }
            }
            b'[' => {
                self.at += 1;
                let mut a = Vec::new();
                self.ws();
                if self.eat("]") {
                    return Ok(Json::Array(a));
                }
                loop {
                    self.ws();
                    a.push(self.value(depth + 1)?);
                    self.ws();
                    if self.eat("]") {
                        return Ok(Json::Array(a));
                    }
                    if !self.eat(",") {
                        return Err(self.err("',' or ']' expected"));
                    }
                }
            }
            b'"' => Ok(Json::Str(self.string()?)),
            _ if self.eat("null") => Ok(Json::Null),
            _ if self.eat("true") => Ok(Json::Bool(true)),
            _ if self.eat("false") => Ok(Json::Bool(false)),
            _ if self.eat("NaN") => Ok(Json::Float(f64::NAN)),
            _ if self.eat("Infinity") => Ok(Json::Float(f64::INFINITY)),
            _ if self.eat("-Infinity") => Ok(Json::Float(f64::NEG_INFINITY)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(self.err("a value expected")),
        }
    }

    fn number(&mut self) -> Result<Json> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let s = p.at;
            while p.s.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at > s
        };
        if self.s[self.at] == b'-' {
            self.at += 1;
        }
        let int_start = self.at;
        if !digits(self) || (self.s[int_start] == b'0' && self.at - int_start > 1) {
            return Err(self.err("a bad number"));
        }
        let mut float = false;
        if self.s.get(self.at) == Some(&b'.') {
            self.at += 1;
            float = true;
            if !digits(self) {
                return Err(self.err("a bad number"));
            }
        }
        if matches!(self.s.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            float = true;
            if matches!(self.s.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if !digits(self) {
                return Err(self.err("a bad number"));
            }
        }
        // ASCII digits and signs only: valid UTF-8.
        let text = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
        if float {
            return text.parse::<f64>().map(Json::Float).map_err(|_| self.err("a bad number"));
        }
        match text.parse::<i128>() {
            Ok(i) if i >= i128::from(i64::MIN) && i <= i128::from(u64::MAX) => Ok(Json::Int(i)),
            _ => {
                let t = text.trim_start_matches('-');
                let digits = t.trim_start_matches('0');
                let sign = if text.starts_with('-') { "-" } else { "" };
                Ok(Json::BigInt(format!("{sign}{}", if digits.is_empty() { "0" } else { digits })))
            }
        }
    }

    fn hex4(&mut self) -> Result<u32> {
        let h = self.s.get(self.at..self.at + 4).ok_or_else(|| self.err("a bad \\u escape"))?;
        let v = std::str::from_utf8(h)
            .ok()
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.err("a bad \\u escape"))?;
        self.at += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self.s.get(self.at).is_some_and(|&b| b != b'"' && b != b'\\' && b >= 0x20) {
                self.at += 1;
            }
            out.push_str(std::str::from_utf8(&self.s[start..self.at]).map_err(|_| self.err("not UTF-8"))?);
            match self.s.get(self.at) {
                Some(b'"') => {
                    self.at += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.at += 1;
                    let Some(&e) = self.s.get(self.at) else { return Err(self.err("an unterminated string")) };
                    self.at += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut c = self.hex4()?;
                            if (0xd800..0xdc00).contains(&c) && self.s[self.at..].starts_with(b"\\u") {
                                let back = self.at;
                                self.at += 2;
                                let lo = self.hex4()?;
                                if (0xdc00..0xe000).contains(&lo) {
                                    c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
                                } else {
                                    self.at = back;
                                }
                            }
                            // A lone surrogate (Python keeps it; UTF-8 cannot hold it).
                            out.push(char::from_u32(c).ok_or_else(|| self.err("a lone surrogate in a \\u escape"))?);
                        }
                        _ => return Err(self.err("a bad escape")),
                    }
                }
                _ => return Err(self.err("an unterminated string (or a raw control character in one)")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_extensions_outside_strings_only() {
        let v = parse(br#"{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN Infinity", "d": -0, "e": 1e400}"#).unwrap();
        assert!(matches!(v.get("a"), Some(Json::Float(f)) if f.is_nan()));
        assert_eq!(v.get("b"), Some(&Json::Array(vec![Json::Float(f64::INFINITY), Json::Float(f64::NEG_INFINITY)])));
        assert_eq!(v.get("c"), Some(&Json::Str("NaN Infinity".into())));
        assert_eq!(v.get("d"), Some(&Json::Int(0)));
        assert_eq!(v.get("e"), Some(&Json::Float(f64::INFINITY)));
        assert!(parse(b"nan").is_err() && parse(b"[1,]").is_err() && parse(b"01").is_err());
    }

    #[test]
    fn integers_beyond_64_bits_and_ascii_output() {
        assert_eq!(parse(b"18446744073709551615").unwrap(), Json::Int(i128::from(u64::MAX)));
        assert_eq!(parse(b"18446744073709551616").unwrap(), Json::BigInt("18446744073709551616".into()));
        assert_eq!(parse(b"-9223372036854775809").unwrap(), Json::BigInt("-9223372036854775809".into()));
        let v = Json::Object(vec![
            ("café".into(), Json::Str("€ \u{1f600} \"\\\n".into())),
            ("f".into(), Json::Array(vec![Json::Float(1.0), Json::Float(0.1), Json::Float(f64::NAN)])),
        ]);
        let s = v.to_ascii();
        assert_eq!(s, r#"{"caf\u00e9": "\u20ac \ud83d\ude00 \"\\\n", "f": [1.0, 0.1, NaN]}"#);
        assert!(s.is_ascii());
        let back = parse(s.as_bytes()).unwrap();
        assert_eq!(back.get("café"), v.get("café"));
    }
}
