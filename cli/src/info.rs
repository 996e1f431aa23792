//! `caterva info`: what an array is and how it is stored, as `key: value`
//! lines or, with `--json`, one JSON object with the same keys.

use caterva::{Array, Config, Context, Filter, Tuning};
use serde_json::{json, Map, Value as Json};

use crate::{Failure, Outcome};

/// The arguments of `caterva info`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The array: a frame file or a sparse-frame directory
    #[arg(value_name = "PATH")]
    path: String,
    /// Print one JSON object instead of key: value lines
    #[arg(long)]
    json: bool,
}

/// A value of one field.
enum Value {
    Text(String),
    Int(i64),
    Ints(Vec<i64>),
    Names(Vec<String>),
    Ratio(f64),
    Bool(bool),
    Missing,
}

/// `caterva info`.
pub fn run(a: &Args) -> Outcome {
    // A bcolz carray or ctable directory, or a Bloscpack file.
    if let Some(outcome) = crate::blz::info(&a.path, a.json) {
        return outcome;
    }
    let ctx = Context::new(Config::default()).map_err(|e| Failure::Failed(e.to_string()))?;
    let arr = crate::open(&ctx, &a.path)?;
    let fields = fields(&a.path, &arr);
    crate::out(&if a.json { json(&fields) } else { lines(&fields) })
}

fn fields(path: &str, arr: &Array) -> Vec<(&'static str, Value)> {
    let info = arr.info();
    let cp = &info.cparams;
    let ints = |v: &[i32]| Value::Ints(v.iter().map(|&x| i64::from(x)).collect());
    let storage = if info.contiguous { "contiguous" } else { "sparse" };
    let cratio = if info.cbytes > 0 { Value::Ratio(info.nbytes as f64 / info.cbytes as f64) } else { Value::Missing };
    let mut fields = vec![
        ("path", Value::Text(path.to_owned())),
        ("storage", Value::Text(storage.to_owned())),
        ("ndim", Value::Int(arr.ndim() as i64)),
        ("shape", Value::Ints(arr.shape().to_vec())),
        ("chunkshape", ints(&info.chunkshape)),
        ("blockshape", ints(&info.blockshape)),
        ("itemsize", Value::Int(arr.itemsize() as i64)),
        ("dtype", arr.dtype().map_or(Value::Missing, Value::Text)),
        ("nitems", Value::Int(arr.nitems())),
        ("codec", Value::Text(cp.codec.to_string())),
        ("clevel", Value::Int(i64::from(cp.clevel))),
        ("filters", Value::Names(filter_names(&cp.filters, &cp.filters_meta))),
        ("nchunks", Value::Int(info.nchunks)),
        ("nbytes", Value::Int(info.nbytes)),
        ("cbytes", Value::Int(info.cbytes)),
        ("cratio", cratio),
        ("checksums", Value::Bool(info.checksums)),
        ("metalayers", Value::Names(info.metalayers)),
        ("vlmetalayers", Value::Names(info.vlmetalayers)),
    ];
    // What a tuning chose and why (`caterva copy --tune`, the Python
    // package's constructors), where one was kept.
    let kept = arr.vlmeta_get(caterva::REPORT_VLMETA).ok();
    if let Some(report) = kept.as_deref().and_then(Tuning::report_in) {
        fields.push(("tuning", Value::Text(report)));
    }
    fields
}

/// The filters of a pipeline, in order, without the empty slots
/// (`trunc_prec` with its meta, `filter N` for a plugin or unknown one).
fn filter_names(filters: &[Filter; 6], metas: &[u8; 6]) -> Vec<String> {
    filters
        .iter()
        .zip(metas)
        .filter(|(&f, _)| f != Filter::NoFilter)
        .map(|(&f, &m)| match f {
            Filter::TruncPrec => format!("{f}({m})"),
            f => f.to_string(),
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
            Value::Bool(b) => (if *b { "yes" } else { "no" }).into(),
            Value::Missing => "(none)".into(),
        };
        out += &format!("{:<14}{text}\n", format!("{key}:"));
    }
    out
}

fn json(fields: &[(&str, Value)]) -> String {
    let object: Map<String, Json> = fields
        .iter()
        .map(|(key, v)| {
            let value = match v {
                Value::Text(s) => json!(s),
                Value::Int(i) => json!(i),
                Value::Ints(v) => json!(v),
                Value::Names(v) => json!(v),
                // Four decimals are plenty for a ratio.
                Value::Ratio(r) => json!((r * 1e4).round() / 1e4),
                Value::Bool(b) => json!(b),
                Value::Missing => Json::Null,
            };
            ((*key).to_owned(), value)
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&Json::Object(object)).expect("a JSON value serialises");
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let ids = |f: [u8; 6]| f.map(Filter::from_id);
        assert_eq!(filter_names(&ids([0, 0, 0, 0, 3, 1]), &[0; 6]), ["delta", "shuffle"]);
        assert_eq!(filter_names(&ids([4, 2, 0, 0, 0, 0]), &[10, 0, 0, 0, 0, 0]), ["trunc_prec(10)", "bitshuffle"]);
        assert_eq!(filter_names(&ids([0, 0, 0, 0, 0, 40]), &[0; 6]), ["filter 40"]);
    }

    #[test]
    fn json_keeps_the_order_and_escapes() {
        let f = [
            ("k", Value::Names(vec!["x\"\n".into()])),
            ("n", Value::Missing),
            ("a", Value::Ratio(2.0 / 3.0)),
            ("b", Value::Bool(true)),
        ];
        let text = json(&f);
        assert!(text.ends_with("}\n"), "{text}");
        let back: Json = serde_json::from_str(&text).unwrap();
        assert_eq!(back, json!({"k": ["x\"\n"], "n": null, "a": 0.6667, "b": true}));
        let keys: Vec<&String> = back.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["k", "n", "a", "b"]);
    }
}
