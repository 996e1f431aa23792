//! `caterva cat` and `caterva slice`: print an array or a region of it like
//! NumPy does, nested brackets with one innermost row per line:
//!
//! ```text
//! [[0, 1, 2],
//!  [3, 4, 5]]
//! ```
//!
//! Items are read a bounded box at a time and printed as they come, so
//! arrays of any size stream through in constant memory.

use std::io::Write;

use caterva::{for_each_index, Array, CParams};

use crate::items::ItemFormat;
use crate::progress::{self, Bar};
use crate::{Failure, Outcome, RunOpts};

/// The arguments of `caterva cat`.
#[derive(clap::Args, Debug)]
pub struct CatArgs {
    /// The array: a frame file or a sparse-frame directory
    #[arg(value_name = "PATH")]
    path: String,
    #[command(flatten)]
    print: PrintOpts,
    #[command(flatten)]
    run: RunOpts,
}

/// The arguments of `caterva slice`.
#[derive(clap::Args, Debug)]
pub struct SliceArgs {
    /// The array: a frame file or a sparse-frame directory
    #[arg(value_name = "PATH")]
    path: String,
    /// The region: START:STOP[:STEP] or an index per axis, comma-separated
    #[arg(value_name = "SELECTION", allow_hyphen_values = true)]
    selection: String,
    #[command(flatten)]
    print: PrintOpts,
    #[command(flatten)]
    run: RunOpts,
}

/// How `cat` and `slice` print.
#[derive(clap::Args, Debug)]
struct PrintOpts {
    /// Read items as this NumPy dtype (<i8, <f4, |u1...) instead of the stored one
    #[arg(short, long, value_name = "DTYPE")]
    dtype: Option<String>,
    /// Print even a huge region (over 100000 items) to a terminal
    #[arg(short, long)]
    all: bool,
}

/// Regions larger than this do not print to a terminal without `--all`.
const TERMINAL_LIMIT: i64 = 100_000;
/// Bytes read per box.
const BOX_BYTES: i64 = 4 << 20;

/// `caterva cat`.
pub fn cat(a: &CatArgs) -> Outcome {
    let arr = crate::open(&crate::context(&a.run, CParams::default(), false)?, &a.path)?;
    let sel = Selection::whole(arr.shape());
    print(&a.print, &a.run, &arr, &sel)
}

/// `caterva slice`.
pub fn slice(a: &SliceArgs) -> Outcome {
    let arr = crate::open(&crate::context(&a.run, CParams::default(), false)?, &a.path)?;
    let sel = Selection::parse(&a.selection, arr.shape()).map_err(Failure::Usage)?;
    print(&a.print, &a.run, &arr, &sel)
}

/// The indices selected on each axis (`start + k * step` for `k` in
/// `0..count`) and the axes of them that are printed.
#[derive(Debug, PartialEq, Eq)]
struct Selection {
    start: Vec<i64>,
    step: Vec<i64>,
    count: Vec<i64>,
    /// Axes selected by a single index are dropped from the output.
    kept: Vec<bool>,
}

impl Selection {
    fn whole(shape: &[i64]) -> Selection {
        let n = shape.len();
        Selection { start: vec![0; n], step: vec![1; n], count: shape.to_vec(), kept: vec![true; n] }
    }

    /// Parse a NumPy-like selection (`0:2,:,5`) for an array of `shape`.
    fn parse(spec: &str, shape: &[i64]) -> Result<Selection, String> {
        let mut sel = Selection::whole(shape);
        let parts: Vec<&str> = if spec.trim().is_empty() { Vec::new() } else { spec.split(',').collect() };
        if parts.len() > shape.len() {
            return Err(format!("selection '{spec}' has {} entries; the array has {} axes", parts.len(), shape.len()));
        }
        for (axis, part) in parts.iter().enumerate() {
            let len = shape[axis];
            let number = |s: &str| -> Result<Option<i64>, String> {
                let s = s.trim();
                if s.is_empty() {
                    return Ok(None);
                }
                s.parse().map(Some).map_err(|_| format!("'{part}' (axis {axis}) is not START:STOP[:STEP] or an index"))
            };
            // NumPy's slice.indices: clip to 0..=len walking forwards, to -1..len walking backwards.
            let bound = |v: Option<i64>, default: i64, step: i64| -> i64 {
                let (lo, hi) = if step > 0 { (0, len) } else { (-1, len - 1) };
                v.map_or(default, |v| (if v < 0 { v + len } else { v }).clamp(lo, hi))
            };
            match part.split(':').collect::<Vec<_>>()[..] {
                [index] if !index.trim().is_empty() => {
                    let i: i64 = index.trim().parse().map_err(|_| format!("'{part}' (axis {axis}) is not an index"))?;
                    let at = if i < 0 { i + len } else { i };
                    if at < 0 || at >= len {
                        return Err(format!("index {i} is out of bounds for axis {axis} with size {len}"));
                    }
                    (sel.start[axis], sel.count[axis], sel.kept[axis]) = (at, 1, false);
                }
                [a, b] | [a, b, _] => {
                    let step = match part.split(':').nth(2).map(number).transpose()?.flatten() {
                        Some(0) => return Err(format!("'{part}' (axis {axis}): the step cannot be 0")),
                        step => step.unwrap_or(1),
                    };
                    let start = bound(number(a)?, if step > 0 { 0 } else { len - 1 }, step);
                    let stop = bound(number(b)?, if step > 0 { len } else { -1 }, step);
                    let count =
                        if step > 0 { (stop - start + step - 1) / step } else { (start - stop - step - 1) / -step };
                    (sel.start[axis], sel.step[axis], sel.count[axis]) = (start, step, count.max(0));
                }
                _ => return Err(format!("'{part}' (axis {axis}) is not START:STOP[:STEP] or an index")),
            }
        }
        Ok(sel)
    }

    fn shape(&self) -> Vec<i64> {
        self.count.clone()
    }

    /// The shape of the printed array.
    fn printed_shape(&self) -> Vec<i64> {
        self.shape().into_iter().zip(&self.kept).filter(|(_, &k)| k).map(|(s, _)| s).collect()
    }
}

/// Print `sel` of `arr` on stdout.
fn print(p: &PrintOpts, run: &RunOpts, arr: &Array, sel: &Selection) -> Outcome {
    let dtype = match &p.dtype {
        Some(d) => {
            caterva::check_dtype(d, arr.itemsize()).map_err(|e| Failure::Usage(e.message()))?;
            Some(d.clone())
        }
        None => arr.dtype(),
    };
    let format = ItemFormat::new(dtype.as_deref(), arr.itemsize());
    let nitems: i64 = sel.shape().iter().product();
    let to_terminal = progress::stdout_is_terminal();
    if to_terminal && nitems > TERMINAL_LIMIT && !p.all {
        return Err(Failure::Usage(format!(
            "the selection holds {nitems} items; pass --all to print them to the terminal anyway, \
             or select a smaller region with 'caterva slice'"
        )));
    }
    // Data goes to stdout: a bar on the same terminal would garble it.
    // Printed to a terminal, the items are their own progress (a bar would
    // garble them); redirected, a bar on stderr shows how far it got.
    let mut bar = Bar::new("cat", "items", nitems as u64, run.drawable() && !to_terminal);
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let mut nested = Nested::new(sel.printed_shape());
    let mut text = String::new();
    let mut done = 0u64;
    for_each_box(arr, sel, |items| {
        for item in items.chunks_exact(arr.itemsize()) {
            text.clear();
            format.write(item, &mut text);
            nested.item(&text, &mut out)?;
        }
        done += (items.len() / arr.itemsize()) as u64;
        bar.update(done);
        Ok(())
    })?;
    nested.finish(&mut out)?;
    out.flush()?;
    Ok(())
}

/// Call `f` with the items of `sel` in C order, a box of at most about
/// [`BOX_BYTES`] at a time. The boxes, in selected positions, hold one
/// position on the axes before some axis `a`, a run of them on `a`, and
/// everything after it.
fn for_each_box(arr: &Array, sel: &Selection, mut f: impl FnMut(&[u8]) -> Outcome) -> Outcome {
    let shape = sel.shape();
    if shape.contains(&0) {
        return Ok(());
    }
    let n = shape.len();
    let item = arr.itemsize() as i64;
    // inner[a]: bytes of one index along axis a (everything after it).
    let inner: Vec<i64> = (0..n).map(|a| shape[a + 1..].iter().fold(item, |acc, &s| acc.saturating_mul(s))).collect();
    let Some(a) = (0..n).find(|&a| inner[a] <= BOX_BYTES) else {
        return read_box(arr, sel, &vec![0; n], &shape, &mut f);
    };
    let run = (BOX_BYTES / inner[a]).clamp(1, shape[a]);
    let mut failure = Ok(());
    for_each_index(&vec![0; a], &shape[..a], |outer| {
        let mut j = 0;
        while failure.is_ok() && j < shape[a] {
            let mut lo = vec![0; n];
            let mut hi = shape.clone();
            for (i, &o) in outer.iter().enumerate() {
                lo[i] = o;
                hi[i] = o + 1;
            }
            lo[a] = j;
            hi[a] = j + run.min(shape[a] - j);
            failure = read_box(arr, sel, &lo, &hi, &mut f);
            j += run;
        }
    });
    failure
}

/// Read the selected positions `[lo, hi)` of `sel` and hand their items to
/// `f`: a slice when every step is 1, else an orthogonal selection.
fn read_box(arr: &Array, sel: &Selection, lo: &[i64], hi: &[i64], f: &mut impl FnMut(&[u8]) -> Outcome) -> Outcome {
    let shape: Vec<i64> = lo.iter().zip(hi).map(|(a, b)| b - a).collect();
    let mut buf = vec![0u8; shape.iter().product::<i64>() as usize * arr.itemsize()];
    let at = |axis: usize, k: i64| sel.start[axis] + k * sel.step[axis];
    let r = if sel.step.iter().all(|&s| s == 1) {
        let start: Vec<i64> = (0..lo.len()).map(|i| at(i, lo[i])).collect();
        let stop: Vec<i64> = (0..lo.len()).map(|i| at(i, hi[i])).collect();
        arr.get_slice_buffer(&start, &stop, &mut buf, &shape)
    } else {
        let lists: Vec<Vec<i64>> = (0..lo.len()).map(|i| (lo[i]..hi[i]).map(|k| at(i, k)).collect()).collect();
        let lists: Vec<&[i64]> = lists.iter().map(Vec::as_slice).collect();
        arr.get_orthogonal_selection(&lists, &mut buf, &shape)
    };
    r.map_err(|e| Failure::Failed(format!("cannot read selected items {lo:?}..{hi:?}: {e}")))?;
    f(&buf)
}

/// Writes items in C order with NumPy's brackets and line breaks.
struct Nested {
    shape: Vec<i64>,
    /// Index of the next item.
    index: Vec<i64>,
    /// Brackets to open before the next item (those that just closed).
    open: usize,
    finished: bool,
}

impl Nested {
    fn new(shape: Vec<i64>) -> Nested {
        let open = shape.len();
        let index = vec![0; shape.len()];
        Nested { shape, index, open, finished: false }
    }

    /// Write the next item.
    fn item(&mut self, text: &str, out: &mut impl Write) -> std::io::Result<()> {
        let n = self.shape.len();
        write!(out, "{}{text}", "[".repeat(self.open))?;
        // Advance the index; the axes that wrap around close their brackets.
        let mut closed = 0;
        for axis in (0..n).rev() {
            self.index[axis] += 1;
            if self.index[axis] < self.shape[axis] {
                break;
            }
            self.index[axis] = 0;
            closed += 1;
        }
        write!(out, "{}", "]".repeat(closed))?;
        if closed == n {
            self.finished = true;
            return writeln!(out);
        }
        if closed == 0 {
            write!(out, ", ")?;
        } else {
            write!(out, ",{}{}", "\n".repeat(closed), " ".repeat(n - closed))?;
        }
        self.open = closed;
        Ok(())
    }

    /// End the output: an array without items still prints `[]`.
    fn finish(&self, out: &mut impl Write) -> std::io::Result<()> {
        if !self.finished {
            writeln!(out, "[]")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(shape: &[i64]) -> String {
        let mut out = Vec::new();
        let mut nest = Nested::new(shape.to_vec());
        let n: i64 = shape.iter().product();
        for i in 0..n {
            nest.item(&i.to_string(), &mut out).unwrap();
        }
        nest.finish(&mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn nested_like_numpy() {
        assert_eq!(nested(&[]), "0\n");
        assert_eq!(nested(&[3]), "[0, 1, 2]\n");
        assert_eq!(nested(&[2, 2]), "[[0, 1],\n [2, 3]]\n");
        assert_eq!(nested(&[2, 1, 2]), "[[[0, 1]],\n\n [[2, 3]]]\n");
        assert_eq!(nested(&[0]), "[]\n");
        assert_eq!(nested(&[2, 0]), "[]\n");
    }

    fn sel(start: &[i64], stop: &[i64], kept: &[bool]) -> Selection {
        let count = start.iter().zip(stop).map(|(a, b)| b - a).collect();
        Selection { start: start.to_vec(), step: vec![1; start.len()], count, kept: kept.to_vec() }
    }

    fn stepped(start: &[i64], step: &[i64], count: &[i64]) -> Selection {
        let kept = vec![true; start.len()];
        Selection { start: start.to_vec(), step: step.to_vec(), count: count.to_vec(), kept }
    }

    #[test]
    fn selections() {
        let shape = [5, 6, 7];
        assert_eq!(Selection::parse("", &shape).unwrap(), Selection::whole(&shape));
        assert_eq!(Selection::parse("0:2,:,5", &shape).unwrap(), sel(&[0, 0, 5], &[2, 6, 6], &[true, true, false]));
        assert_eq!(Selection::parse("-2:, 1", &shape).unwrap(), sel(&[3, 1, 0], &[5, 2, 7], &[true, false, true]));
        assert_eq!(Selection::parse(":-4,3:100", &shape).unwrap(), sel(&[0, 3, 0], &[1, 6, 7], &[true, true, true]));
        assert_eq!(Selection::parse("4:2", &shape).unwrap(), sel(&[4, 0, 0], &[4, 6, 7], &[true, true, true]));
        assert_eq!(Selection::parse("-1", &shape).unwrap(), sel(&[4, 0, 0], &[5, 6, 7], &[false, true, true]));
        assert!(Selection::parse("5", &shape).unwrap_err().contains("out of bounds for axis 0 with size 5"));
        // Steps, as NumPy's slice.indices: range(5)[0:4:2] = [0, 2], [::-2] = [4, 2, 0],
        // range(6)[5:0:-3] = [5, 2], range(7)[10::3] = [].
        assert_eq!(Selection::parse("0:4:2", &shape).unwrap(), stepped(&[0, 0, 0], &[2, 1, 1], &[2, 6, 7]));
        assert_eq!(
            Selection::parse("::-2,5:0:-3,10::3", &shape).unwrap(),
            stepped(&[4, 5, 7], &[-2, -3, 3], &[3, 2, 0])
        );
        assert_eq!(Selection::parse(":,::-1", &shape).unwrap(), stepped(&[0, 5, 0], &[1, -1, 1], &[5, 6, 7]));
        assert!(Selection::parse("::0", &shape).unwrap_err().contains("cannot be 0"));
        assert!(Selection::parse("0:4:x", &shape).is_err());
        assert!(Selection::parse("1,2,3,4", &shape).unwrap_err().contains("3 axes"));
        assert!(Selection::parse("a:b", &shape).is_err());
        assert!(Selection::parse("1,,2", &shape).is_err());
        assert_eq!(Selection::parse("", &[]).unwrap(), Selection::whole(&[]));
    }
}
