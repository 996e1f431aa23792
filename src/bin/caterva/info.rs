//! `caterva info`: what an array is and how it is stored, as `key: value`
//! lines or, with `--json`, one JSON object with the same keys.

use caterva::Array;

use crate::args::{Opt, Parsed};
use crate::{Command, Outcome};

/// `caterva info`.
pub const COMMAND: Command = Command {
    name: "info",
    usage: "info PATH [--json]",
    summary: "show geometry, dtype, storage, compression and metalayers",
    details: "nbytes is the size of the stored chunks uncompressed (chunks are padded to\n\
whole blocks, so it may exceed nitems x itemsize), cbytes their compressed size;\n\
cratio = nbytes / cbytes. Without a 'b2nd' metalayer the dtype is (none).",
    opts: &[Opt::flag("json", "print one JSON object instead of key: value lines")],
    run,
};

/// A value of one field.
enum Value {
    Text(String),
    Int(i64),
    Ints(Vec<i64>),
    Names(Vec<String>),
    Ratio(f64),
    Missing,
}

fn run(p: &Parsed) -> Outcome {
    let [path] = crate::positionals(p, &["PATH"])?[..] else { unreachable!("one positional") };
    let ctx = caterva::Context::new(caterva::Config::default()).map_err(|e| crate::Failure::Failed(e.to_string()))?;
    let arr = crate::open(&ctx, path)?;
    let fields = fields(path, &arr);
    let text = if p.flag("json") { json(&fields) } else { lines(&fields) };
    print!("{text}");
    Ok(())
}

fn fields(path: &str, arr: &Array) -> Vec<(&'static str, Value)> {
    let sc = arr.schunk();
    let g = arr.geometry();
    let cp = sc.cparams();
    let ints = |v: &[i32]| Value::Ints(v.iter().map(|&x| i64::from(x)).collect());
    let storage = if sc.storage().contiguous { "contiguous" } else { "sparse" };
    let cratio = if sc.cbytes() > 0 { Value::Ratio(sc.nbytes() as f64 / sc.cbytes() as f64) } else { Value::Missing };
    vec![
        ("path", Value::Text(path.to_owned())),
        ("storage", Value::Text(storage.to_owned())),
        ("ndim", Value::Int(arr.ndim() as i64)),
        ("shape", Value::Ints(arr.shape().to_vec())),
        ("chunkshape", ints(g.chunkshape())),
        ("blockshape", ints(g.blockshape())),
        ("itemsize", Value::Int(arr.itemsize() as i64)),
        ("dtype", arr.dtype().map_or(Value::Missing, Value::Text)),
        ("nitems", Value::Int(arr.nitems())),
        ("codec", Value::Text(codec_name(cp.codec))),
        ("clevel", Value::Int(i64::from(cp.clevel))),
        ("filters", Value::Names(filter_names(&cp.filters, &cp.filters_meta))),
        ("nchunks", Value::Int(sc.nchunks())),
        ("nbytes", Value::Int(sc.nbytes())),
        ("cbytes", Value::Int(sc.cbytes())),
        ("cratio", cratio),
        ("metalayers", Value::Names(sc.meta_names())),
        ("vlmetalayers", Value::Names(sc.vlmeta_names())),
    ]
}

/// The codecs c-blosc2 ships, by code.
const CODECS: &[(u32, &str)] = &[
    (blosc2_sys::BLOSC_BLOSCLZ, "blosclz"),
    (blosc2_sys::BLOSC_LZ4, "lz4"),
    (blosc2_sys::BLOSC_LZ4HC, "lz4hc"),
    (blosc2_sys::BLOSC_ZLIB, "zlib"),
    (blosc2_sys::BLOSC_ZSTD, "zstd"),
];

/// The name of codec `code` (`codec N` for a plugin or unknown one).
pub fn codec_name(code: u8) -> String {
    CODECS.iter().find(|(c, _)| *c == u32::from(code)).map_or_else(|| format!("codec {code}"), |(_, n)| (*n).into())
}

/// The code of codec `name`.
pub fn codec_code(name: &str) -> Option<u8> {
    CODECS.iter().find(|(_, n)| *n == name).map(|(c, _)| *c as u8)
}

/// The names of the filters in a pipeline, in order, without the empty slots.
fn filter_names(filters: &[u8; 6], metas: &[u8; 6]) -> Vec<String> {
    filters
        .iter()
        .zip(metas)
        .filter(|(&f, _)| f != blosc2_sys::BLOSC_NOFILTER as u8)
        .map(|(&f, &m)| match u32::from(f) {
            blosc2_sys::BLOSC_SHUFFLE => "shuffle".into(),
            blosc2_sys::BLOSC_BITSHUFFLE => "bitshuffle".into(),
            blosc2_sys::BLOSC_DELTA => "delta".into(),
            blosc2_sys::BLOSC_TRUNC_PREC => format!("trunc_prec({m})"),
            _ => format!("filter {f}"),
        })
        .collect()
}

fn lines(fields: &[(&str, Value)]) -> String {
    let mut out = String::new();
    for (key, v) in fields {
        let text = match v {
            Value::Text(s) => s.clone(),
            Value::Int(i) => i.to_string(),
            Value::Ints(v) => format!("{v:?}"),
            Value::Names(v) if v.is_empty() => "(none)".into(),
            Value::Names(v) => v.join(", "),
            Value::Ratio(r) => format!("{r:.2}"),
            Value::Missing => "(none)".into(),
        };
        out += &format!("{:<14}{text}\n", format!("{key}:"));
    }
    out
}

fn json(fields: &[(&str, Value)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(key, v)| {
            let text = match v {
                Value::Text(s) => json_str(s),
                Value::Int(i) => i.to_string(),
                Value::Ints(v) => format!("{v:?}"),
                Value::Names(v) => format!("[{}]", v.iter().map(|s| json_str(s)).collect::<Vec<_>>().join(", ")),
                Value::Ratio(r) => format!("{r:.4}"),
                Value::Missing => "null".into(),
            };
            format!("  {}: {text}", json_str(key))
        })
        .collect();
    format!("{{\n{}\n}}\n", body.join(",\n"))
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out += "\\\"",
            '\\' => out += "\\\\",
            '\n' => out += "\\n",
            c if (c as u32) < 0x20 => out += &format!("\\u{:04x}", c as u32),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(codec_name(5), "zstd");
        assert_eq!(codec_name(200), "codec 200");
        assert_eq!(codec_code("lz4hc"), Some(2));
        assert_eq!(codec_code("snappy"), None);
        assert_eq!(filter_names(&[0, 0, 0, 0, 3, 1], &[0; 6]), ["delta", "shuffle"]);
        assert_eq!(filter_names(&[4, 2, 0, 0, 0, 0], &[10, 0, 0, 0, 0, 0]), ["trunc_prec(10)", "bitshuffle"]);
    }

    #[test]
    fn json_escapes() {
        assert_eq!(json_str("a\"b\\c\n\u{1}"), r#""a\"b\\c\n\u0001""#);
        let f = [("k", Value::Names(vec!["x".into()])), ("n", Value::Missing)];
        assert_eq!(json(&f), "{\n  \"k\": [\"x\"],\n  \"n\": null\n}\n");
    }
}
