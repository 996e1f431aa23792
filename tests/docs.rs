//! The documentation: README.md, python/README.md and the book in docs/
//! (`docs/src/**/*.md`, built by `bash .ci/docs`). Two tests:
//!
//! - `links`: every relative link and `#anchor` resolves. A link goes to an
//!   existing file, and an anchor to a heading of the page it names (ids as
//!   mdBook and GitHub make them). A book page is checked as mdBook renders
//!   it, its `{{#include FILE}}`s expanded (so a link inside an included file
//!   is resolved from the including page), and may link only inside
//!   docs/src, which is all the built book holds. python/README.md, the
//!   package's description on PyPI, has no relative links.
//! - `samples`: every fenced code block is run, or checked, by its info
//!   string, `LANG[,ATTRIBUTE...]`; no block is skipped, and an unknown
//!   language or attribute fails the test. The blocks of one page run in
//!   order in one directory (target/docs-samples/<page>/, made empty first),
//!   so a block may use what an earlier block of its page wrote:
//!   - `c`: compiled with `cc -std=c99 -Wall -Werror` against include/ and
//!     target/<profile>/libcaterva.so (the library `cargo build` made), and
//!     run with `CATERVA_TRACE=1`: it must exit 0 and print nothing on
//!     stderr (where the library explains every failed call). A block that
//!     holds `main(` is a whole program; any other is a fragment, put in
//!     `int main(void)` after `<caterva.h>`, `<stdio.h>`, `<stdlib.h>` and
//!     `<string.h>` (its own `#include` lines go before `main`).
//!   - `rust`: compiled against the `caterva` crate that `cargo build` made
//!     (target/<profile>/libcaterva.rlib), all blocks into one program, and
//!     run. A block is the body of a function returning `Result<(), Box<dyn
//!     Error>>` (as rustdoc runs examples), unless it holds `fn main`; lines
//!     starting with `# ` are compiled but hidden in the book, as mdBook and
//!     rustdoc hide them.
//!   - `python`: run by the Python of the venv the Python tests use
//!     (target/interop/pycaterva, or `CATERVA_PYTHON_VENV`), into which this
//!     test first builds this tree's package as tests/python.rs does.
//!   - `sh`: run by `bash -e -o pipefail` with target/<profile> first on
//!     PATH (so `caterva` is this tree's command-line tool).
//!   - `cmake`: never run here; it needs `ci=`.
//!   - no language, or `text`: output, shown, not run.
//!
//!   Attributes:
//!   - `no_run`: compiled (C, Rust), parsed (Python, `bash -n`), checked
//!     (below) but not run: for what needs a network, a server or an
//!     installed prefix.
//!   - `ci=FILE`: the block shows what the CI script (or file) FILE runs,
//!     and is not run here: each of its commands must be found in FILE, a
//!     line of FILE holding each of its words (a `$VAR` in FILE, or a
//!     `<placeholder>` in the block, stands for any text from there on; `&&`,
//!     `;` and `|` separate commands; comments are left out).
//!   - `setup=NAME`: before the block runs, this test writes the fixture
//!     NAME (see `setup`) into the page's directory: `array` (a.b2frame, a
//!     2-d float64 array) or `blz` (bcolz carrays, a ctable and a Bloscpack
//!     file, made with caterva's own export).
//!
//!   Every `sh` block, run or not, is also checked for what can rot without
//!   running it: paths into the repository exist; `caterva SUB --long`
//!   options are in `caterva SUB --help`; `cargo --bench/--test/--example
//!   NAME` name a bench, test or example; `bash SCRIPT --option` options are
//!   found in SCRIPT's directory.
//!
//!   Blocks of files a book page includes (benchmark READMEs,
//!   ARCHITECTURE.md) cannot carry attributes: `INCLUDED_BLOCKS` gives them.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Attributes of the code blocks of included files, by file and block
/// number (from 0), as if written in their info strings.
const INCLUDED_BLOCKS: &[(&str, usize, &str)] = &[
    // Hours of benchmark on many libraries; `--quick` is CI's (.ci/run, full run).
    ("bench/compare/README.md", 0, "sh,no_run"),
    // A diagram.
    ("ARCHITECTURE.md", 0, "text"),
    ("ARCHITECTURE.md", 1, "text"),
];

/// Where a book page's links may go: what the built book holds.
const BOOK: &str = "docs/src";

fn root() -> PathBuf {
    common::manifest_dir()
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// README.md, python/README.md and every page of the book.
fn doc_files() -> Vec<PathBuf> {
    let r = root();
    let mut files = vec![r.join("README.md"), r.join("python/README.md")];
    let mut pages = Vec::new();
    walk(&r.join(BOOK), &mut pages);
    pages.sort();
    files.extend(pages);
    files
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Lexically normalised `base/target` (no `..` left, no file system access).
fn join(base: &Path, target: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for c in base.join(target).components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// `{{#include PATH}}` / `{{#include PATH:START:END}}` (mdBook's include,
/// line ranges from 1, inclusive) expanded, recursively, relative to the
/// including file. Returns the text and the files included.
fn expand(file: &Path, text: &str, included: &mut Vec<PathBuf>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{#include ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "{{#include ".len()..];
        let end = after.find("}}").ok_or_else(|| format!("{}: unterminated {{{{#include", rel(file)))?;
        let spec = after[..end].trim();
        let mut parts = spec.split(':');
        let path = join(file.parent().unwrap(), parts.next().unwrap());
        let content = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: {{{{#include {spec}}}}}: {}: {e}", rel(file), rel(&path)))?;
        let lines: Vec<&str> = content.lines().collect();
        let num = |s: Option<&str>, d: usize| -> Result<usize, String> {
            match s {
                None | Some("") => Ok(d),
                Some(n) => n.parse().map_err(|_| format!("{}: {{{{#include {spec}}}}}: only line ranges", rel(file))),
            }
        };
        let from = num(parts.next(), 1)?.max(1);
        let to = num(parts.next(), lines.len())?.min(lines.len());
        let piece = lines.get(from - 1..to).unwrap_or(&[]).join("\n");
        included.push(path.clone());
        out.push_str(&expand(&path, &piece, included)?);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A fenced code block.
struct Block {
    line: usize,
    info: String,
    code: String,
}

/// The fenced code blocks of `text` (fences of three or more backticks or
/// tildes, indented or not, as in list items).
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(usize, String, usize, String, Vec<String>)> = None; // line, fence, indent, info, lines
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let fence: String = trimmed.chars().take_while(|&c| c == '`' || c == '~').collect();
        match &mut open {
            None if fence.len() >= 3 && fence.chars().all(|c| c == fence.chars().next().unwrap()) => {
                open = Some((n + 1, fence.clone(), indent, trimmed[fence.len()..].trim().to_string(), Vec::new()));
            }
            None => {}
            Some((start, f, ind, info, lines)) => {
                if trimmed.starts_with(f.as_str()) && trimmed[f.len()..].trim().is_empty() {
                    out.push(Block { line: *start, info: info.clone(), code: lines.join("\n") + "\n" });
                    open = None;
                } else {
                    let cut = line.len() - line.trim_start().len();
                    lines.push(line[cut.min(*ind)..].to_string());
                }
            }
        }
    }
    if let Some((start, ..)) = open {
        out.push(Block { line: start, info: "<unterminated>".into(), code: String::new() });
    }
    out
}

/// `text` without its fenced code blocks (their lines left empty).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let t = line.trim_start();
        let f: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
        match &fence {
            None if f.len() >= 3 => fence = Some(f),
            None => out.push_str(line),
            Some(open) if t.starts_with(open.as_str()) && t[open.len()..].trim().is_empty() => fence = None,
            Some(_) => {}
        }
        out.push('\n');
    }
    out
}

/// `line` without its inline code spans.
fn strip_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find('`') {
        out.push_str(&rest[..i]);
        let ticks = rest[i..].chars().take_while(|&c| c == '`').count();
        let after = &rest[i + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(j) => rest = &after[j + ticks..],
            None => {
                out.push_str(&rest[i..]);
                return out;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The anchors of a page's headings: mdBook's ids (GitHub's are the same for
/// these pages): the heading's text, lowercased, alphanumerics, `-` and `_`
/// kept, spaces to `-`, the rest dropped; repeats get `-1`, `-2`, ...
fn anchors(text: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    for line in prose(text).lines() {
        let t = line.trim_start();
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if hashes == 0 || hashes > 6 || !t[hashes..].starts_with(' ') {
            continue;
        }
        // The heading's text: links to their text, code spans to their content.
        let mut heading = t[hashes..].trim().trim_end_matches('#').trim().to_string();
        while let Some(i) = heading.find("](") {
            let Some(j) = heading[i..].find(')') else { break };
            heading.replace_range(i..i + j + 1, "");
        }
        let id: String = heading
            .chars()
            .filter_map(|c| {
                if c.is_alphanumeric() || c == '_' || c == '-' {
                    Some(c.to_lowercase().next().unwrap())
                } else if c.is_whitespace() {
                    Some('-')
                } else {
                    None
                }
            })
            .collect();
        let n = seen.entry(id.clone()).or_insert(0);
        out.insert(if *n == 0 { id.clone() } else { format!("{id}-{n}") });
        *n += 1;
    }
    out
}

/// The link targets of `text` (outside code): inline `[text](target)` and
/// reference definitions `[label]: target`.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose(text).lines().enumerate() {
        let line = strip_code_spans(line);
        let t = line.trim_start();
        if t.starts_with('[') {
            if let Some(i) = t.find("]: ") {
                if !t[..i].contains("](") {
                    out.push((n + 1, t[i + 3..].split_whitespace().next().unwrap_or("").to_string()));
                    continue;
                }
            }
        }
        let mut rest = line.as_str();
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let end = after.find([')', ' ']).unwrap_or(after.len());
            out.push((n + 1, after[..end].trim_matches(['<', '>']).to_string()));
            rest = &after[end..];
        }
    }
    out
}

/// A page as shown: a book page with its includes expanded.
fn rendered(file: &Path, included: &mut Vec<PathBuf>) -> Result<String, String> {
    let text = read(file);
    if file.starts_with(root().join(BOOK)) {
        expand(file, &text, included)
    } else {
        Ok(text)
    }
}

#[test]
fn links_resolve() {
    let r = root();
    let book = r.join(BOOK);
    let mut problems = Vec::new();
    let mut anchor_cache: HashMap<PathBuf, HashSet<String>> = HashMap::new();
    let mut anchors_of = |p: &Path| -> HashSet<String> {
        anchor_cache
            .entry(p.to_path_buf())
            .or_insert_with(|| anchors(&rendered(p, &mut Vec::new()).unwrap_or_default()))
            .clone()
    };
    let mut pages_in_summary = HashSet::new();
    for file in doc_files() {
        let text = match rendered(&file, &mut Vec::new()) {
            Ok(t) => t,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let in_book = file.starts_with(&book);
        let pypi = file == r.join("python/README.md");
        for (line, target) in links(&text) {
            let at = format!("{}:{line}: {target}", rel(&file));
            if target.is_empty() {
                problems.push(format!("{at}: empty link"));
                continue;
            }
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            if pypi {
                problems.push(format!("{at}: a relative link, which PyPI cannot follow"));
                continue;
            }
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let dest = if path.is_empty() { file.clone() } else { join(file.parent().unwrap(), path) };
            if in_book && !dest.starts_with(&book) {
                problems.push(format!(
                    "{at}: outside {BOOK}, so not in the built book (name the file in code, or link a page)"
                ));
                continue;
            }
            if !dest.exists() {
                problems.push(format!("{at}: {} does not exist", rel(&dest)));
                continue;
            }
            if file.ends_with("SUMMARY.md") {
                pages_in_summary.insert(dest.clone());
            }
            if let Some(a) = anchor {
                if dest.extension().is_none_or(|x| x != "md") {
                    problems.push(format!("{at}: an anchor into a file that is not a page"));
                } else if !anchors_of(&dest).contains(a) {
                    problems.push(format!("{at}: no heading of {} has the id '{a}'", rel(&dest)));
                }
            }
        }
    }
    // Every page is in the book's table of contents.
    for file in doc_files().into_iter().filter(|f| f.starts_with(&book) && !f.ends_with("SUMMARY.md")) {
        if !pages_in_summary.contains(&file) {
            problems.push(format!("{}: not in docs/src/SUMMARY.md", rel(&file)));
        }
    }
    assert!(problems.is_empty(), "broken links in the documentation:\n{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------
// Samples

#[derive(Debug, Clone, PartialEq)]
enum Mode {
    Run,
    NoRun,
    Ci(String),
}

struct Sample {
    at: String,
    lang: String,
    mode: Mode,
    setup: Option<String>,
    code: String,
    /// The page whose directory the sample runs in.
    page: String,
}

fn parse_info(info: &str) -> Result<(String, Mode, Option<String>), String> {
    let mut parts = info.split(',').map(str::trim);
    let lang = parts.next().unwrap_or("").to_string();
    let mut mode = Mode::Run;
    let mut setup = None;
    for a in parts {
        if a == "no_run" && mode == Mode::Run {
            mode = Mode::NoRun;
        } else if let Some(f) = a.strip_prefix("ci=").filter(|_| mode == Mode::Run) {
            mode = Mode::Ci(f.to_string());
        } else if let Some(s) = a.strip_prefix("setup=") {
            setup = Some(s.to_string());
        } else {
            return Err(format!("unknown or conflicting attribute '{a}'"));
        }
    }
    match lang.as_str() {
        "c" | "rust" | "python" | "sh" => {}
        "cmake" if matches!(mode, Mode::Ci(_)) => {}
        "cmake" => return Err("a cmake block needs ci=FILE".into()),
        "" | "text" if mode == Mode::Run && setup.is_none() => {}
        "" | "text" => return Err("an output block takes no attributes".into()),
        _ => return Err(format!("unknown language '{lang}'")),
    }
    if setup.is_some() && mode != Mode::Run {
        return Err("setup= on a block that is not run".into());
    }
    Ok((lang, mode, setup))
}

/// Every sample of the documentation, or the problems of their info strings.
fn samples() -> (Vec<Sample>, Vec<String>) {
    let r = root();
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut included = Vec::new();
    let mut sources: Vec<(PathBuf, Option<&str>)> = Vec::new();
    for f in doc_files() {
        if let Err(e) = rendered(&f, &mut included) {
            problems.push(e);
        }
        sources.push((f, None));
    }
    let mut seen = HashSet::new();
    for f in included {
        if seen.insert(f.clone()) && !f.starts_with(r.join(BOOK)) {
            sources.push((f, Some("included")));
        }
    }
    for (file, included) in sources {
        let name = rel(&file);
        for (i, b) in blocks(&read(&file)).into_iter().enumerate() {
            let at = format!("{name}:{}", b.line);
            let info = if included.is_some() {
                match INCLUDED_BLOCKS.iter().find(|(f, n, _)| *f == name && *n == i) {
                    Some((_, _, info)) => {
                        if !b.info.is_empty() && !info.starts_with(b.info.as_str()) && *info != "text" {
                            problems.push(format!("{at}: INCLUDED_BLOCKS says '{info}' of a '{}' block", b.info));
                        }
                        info.to_string()
                    }
                    None => {
                        problems.push(format!("{at}: block {i} of an included file: add it to INCLUDED_BLOCKS"));
                        continue;
                    }
                }
            } else {
                b.info.clone()
            };
            match parse_info(&info) {
                Ok((lang, mode, setup)) => {
                    let page = name.trim_end_matches(".md").replace(['/', '.'], "_");
                    out.push(Sample { at, lang, mode, setup, code: b.code, page });
                }
                Err(e) => problems.push(format!("{at}: ```{info}: {e}")),
            }
        }
    }
    (out, problems)
}

/// Shell commands of a block: continuation lines joined, comments and
/// here-documents left out, split at `&&`, `||`, `;` and `|`, as words.
fn commands(code: &str) -> Vec<Vec<String>> {
    let mut logical = Vec::new();
    let mut cur = String::new();
    let mut heredoc: Option<String> = None;
    for line in code.lines() {
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        if let Some(i) = line.find("<<") {
            let tag = line[i + 2..].trim_start_matches('-').trim().trim_matches(['\'', '"']).to_string();
            heredoc = Some(tag.split_whitespace().next().unwrap_or("").to_string());
        }
        let line = strip_comment(line);
        if let Some(l) = line.strip_suffix('\\') {
            cur.push_str(l);
            cur.push(' ');
        } else {
            cur.push_str(&line);
            logical.push(std::mem::take(&mut cur));
        }
    }
    logical.push(cur);
    let mut out = Vec::new();
    for l in logical {
        let words = shell_words(&l);
        let mut cmd = Vec::new();
        for w in words {
            if ["&&", "||", ";", "|", "(", ")"].contains(&w.as_str()) {
                out.push(std::mem::take(&mut cmd));
            } else {
                cmd.push(w);
            }
        }
        out.push(cmd);
    }
    out.retain(|c| !c.is_empty());
    out
}

/// `line` up to a `#` comment (a `#` at the start or after a space, outside quotes).
fn strip_comment(line: &str) -> String {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && prev.is_whitespace() => return line[..i].trim_end().to_string(),
            _ => {}
        }
        prev = c;
    }
    line.trim_end().to_string()
}

/// Words as the shell splits them (quotes removed), with `&&`, `||`, `;`,
/// `|`, `(` and `)` as words of their own.
fn shell_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut w = String::new();
    let mut quote: Option<char> = None;
    let mut chars = s.chars().peekable();
    let mut started = false;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => w.push(c),
            None => match c {
                '\'' | '"' => {
                    quote = Some(c);
                    started = true;
                }
                c if c.is_whitespace() => {
                    if started || !w.is_empty() {
                        out.push(std::mem::take(&mut w));
                    }
                    started = false;
                }
                '&' | '|' | ';' | '(' | ')' if !(c == '(' && w.ends_with('$')) => {
                    if started || !w.is_empty() {
                        out.push(std::mem::take(&mut w));
                    }
                    started = false;
                    let mut op = c.to_string();
                    if (c == '&' || c == '|') && chars.peek() == Some(&c) {
                        op.push(chars.next().unwrap());
                    }
                    out.push(op);
                }
                c => w.push(c),
            },
        }
    }
    if started || !w.is_empty() {
        out.push(w);
    }
    out
}

/// Whether a word of a documented command matches a word of a script: equal,
/// or equal up to where a `$VAR` of the script or a `<placeholder>` of the
/// documentation begins (an option, `-x`, only where the script spells it).
fn word_matches(doc: &str, script: &str) -> bool {
    let d = doc.find(['<', '$']).map(|i| &doc[..i]);
    let s = script.find('$').map(|i| &script[..i]);
    // An option is the script's own, never a variable's value.
    if doc.starts_with('-') && s.is_some_and(str::is_empty) {
        return false;
    }
    match (d, s) {
        (None, None) => doc == script,
        (Some(d), Some(s)) => d.starts_with(s) || s.starts_with(d),
        (None, Some(s)) => doc.starts_with(s),
        (Some(d), None) => script.starts_with(d),
    }
}

/// `ci=FILE`: each command of the block is on one line of FILE.
fn check_ci(s: &Sample, file: &str) -> Result<(), String> {
    let path = root().join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| format!("ci={file}: {e}"))?;
    let cmake = s.lang == "cmake";
    let tokens = |l: &str| -> Vec<String> {
        if cmake {
            strip_comment(l)
                .split(|c: char| c.is_whitespace() || c == '(' || c == ')')
                .filter(|w| !w.is_empty())
                .map(String::from)
                .collect()
        } else {
            shell_words(&strip_comment(l))
        }
    };
    // FILE's logical lines (continuations joined), as sets of words.
    let mut lines: Vec<Vec<String>> = Vec::new();
    let mut cur = String::new();
    for l in text.lines() {
        match l.strip_suffix('\\') {
            Some(l) => {
                cur.push_str(l);
                cur.push(' ');
            }
            None => {
                cur.push_str(l);
                lines.push(tokens(&std::mem::take(&mut cur)));
            }
        }
    }
    let cmds: Vec<Vec<String>> =
        if cmake { s.code.lines().map(tokens).filter(|t| !t.is_empty()).collect() } else { commands(&s.code) };
    let mut missing = Vec::new();
    for cmd in &cmds {
        let found = lines.iter().any(|line| cmd.iter().all(|w| line.iter().any(|x| word_matches(w, x))));
        if !found {
            missing.push(cmd.join(" "));
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("ci={file}: not found there: {}", missing.join("; ")))
    }
}

/// `code` with its `<placeholder>`s (a lowercase word or words in angle
/// brackets, which the shell would take for redirections) as `X`.
fn without_placeholders(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(i) = rest.find('<') {
        let after = &rest[i + 1..];
        let end = after.find('>').filter(|&j| {
            j > 0 && after[..j].chars().all(|c| c.is_ascii_lowercase() || c == ' ' || c == '_' || c == '-')
        });
        out.push_str(&rest[..i]);
        match end {
            Some(j) => {
                out.push('X');
                rest = &after[j + 1..];
            }
            None => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// What can rot in a shell block without running it.
fn check_sh_static(s: &Sample, bin: &Path, help: &mut HashMap<String, Result<String, String>>) -> Vec<String> {
    let r = root();
    let mut problems = Vec::new();
    let out = Command::new("bash").arg("-n").arg("-c").arg(without_placeholders(&s.code)).output().expect("bash runs");
    if !out.status.success() {
        problems.push(format!("bash -n: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    const TRACKED: &[&str] = &[
        "examples/",
        "bench/",
        "benches/",
        "tests/",
        ".ci/",
        "python/",
        "cmake/",
        "include/",
        "cli/",
        "src/",
        "docs/",
        "fuzz/",
        "ctests/",
    ];
    for cmd in commands(&s.code) {
        let mut words: Vec<&str> = cmd.iter().map(String::as_str).collect();
        while words.first().is_some_and(|w| *w == "export" || (w.contains('=') && !w.starts_with('-'))) {
            words.remove(0);
        }
        for w in &words {
            let p = w.trim_end_matches([',', ')']);
            if TRACKED.iter().any(|t| p.starts_with(t)) && !p.contains(['<', '$', '*']) && !r.join(p).exists() {
                problems.push(format!("{p} does not exist"));
            }
        }
        let longs = |from: usize| -> Vec<&str> {
            words
                .iter()
                .skip(from)
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(|w| w.split('=').next().unwrap())
                .collect()
        };
        match words.as_slice() {
            ["caterva", sub, ..] if !sub.starts_with('-') => {
                let h = help.entry(sub.to_string()).or_insert_with(|| {
                    let o =
                        Command::new(bin.join("caterva")).args([sub, "--help"]).output().map_err(|e| e.to_string())?;
                    if o.status.success() {
                        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
                    } else {
                        Err(String::from_utf8_lossy(&o.stderr).trim().to_string())
                    }
                });
                match h {
                    Err(e) => problems.push(format!("caterva {sub} --help: {e}")),
                    Ok(h) => {
                        for o in longs(2) {
                            if !h.split(|c: char| !(c.is_alphanumeric() || c == '-')).any(|x| x == o) {
                                problems.push(format!("caterva {sub}: no option {o}"));
                            }
                        }
                    }
                }
            }
            ["cargo", rest @ ..] => {
                for (flag, dir) in [("--bench", "benches"), ("--test", "tests"), ("--example", "examples")] {
                    if let Some(i) = rest.iter().position(|w| *w == flag) {
                        if let Some(name) = rest.get(i + 1) {
                            if !r.join(dir).join(format!("{name}.rs")).exists() {
                                problems.push(format!("cargo {flag} {name}: no {dir}/{name}.rs"));
                            }
                        }
                    }
                }
            }
            ["bash", script, ..] if TRACKED.iter().any(|t| script.starts_with(t)) => {
                let dir = r.join(script).parent().unwrap().to_path_buf();
                let mut text = String::new();
                for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    if e.path().is_file() {
                        text.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
                    }
                }
                for o in longs(2) {
                    if !text.contains(o) {
                        problems.push(format!("bash {script}: no option {o} in {}", rel(&dir)));
                    }
                }
            }
            _ => {}
        }
    }
    problems
}

/// The fixtures of `setup=NAME`, written into `dir`.
fn setup(name: &str, dir: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use caterva::{blz, Array, Config, Context, Params, StorageParams};
    let ctx = Context::new(Config { nthreads: 2, ..Config::default() })?;
    let frame =
        |shape: Vec<i64>, chunks: Vec<i32>, blocks: Vec<i32>, path: &str, scale: f64| -> caterva::Result<Array> {
            let n: i64 = shape.iter().product();
            let bytes: Vec<u8> = (0..n).flat_map(|i| (100.0 + scale * (i as f64 * 0.01).sin()).to_le_bytes()).collect();
            let params = Params { itemsize: 8, shape, dtype: Some("<f8".into()) };
            let storage = StorageParams {
                chunkshape: chunks,
                blockshape: blocks,
                contiguous: true,
                urlpath: Some(dir.join(path).to_str().unwrap().into()),
                ..Default::default()
            };
            Array::from_buffer(&ctx, &params, &storage, &bytes)
        };
    match name {
        "array" => {
            frame(vec![100, 120], vec![50, 60], vec![10, 12], "a.b2frame", 1.0)?;
        }
        "blz" => {
            let opts = blz::ExportOptions::default();
            let prices = frame(vec![10_000], vec![1000], vec![250], "fixture-prices.b2frame", 1.0)?;
            let open = frame(vec![10_000], vec![1000], vec![250], "open.b2frame", 2.0)?;
            blz::export_carray(&prices, &dir.join("prices.bcolz"), &opts, &mut |_, _| {})?;
            blz::export_ctable(
                &[("open", &open), ("close", &prices)],
                &dir.join("daily_bars.bcolz"),
                &opts,
                &mut |_, _| {},
            )?;
            std::fs::create_dir_all(dir.join("daily_bars"))?;
            blz::export_carray(&prices, &dir.join("daily_bars/close.bcolz"), &opts, &mut |_, _| {})?;
            blz::export_bloscpack(&prices, &dir.join("data.blp"), &opts, &mut |_, _| {})?;
            std::fs::remove_file(dir.join("fixture-prices.b2frame"))?;
        }
        _ => return Err(format!("no fixture '{name}'").into()),
    }
    Ok(())
}

fn show(o: &Output) -> String {
    format!(
        "exit {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A C sample as a translation unit.
fn c_source(code: &str) -> String {
    if code.contains("main(") {
        return code.to_string();
    }
    let (includes, body): (Vec<&str>, Vec<&str>) = code.lines().partition(|l| l.trim_start().starts_with("#include"));
    // caterva.h has no include guard: each header once.
    let mut src = String::new();
    let mut seen = HashSet::new();
    let standard = ["#include <caterva.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>"];
    for i in standard.iter().copied().chain(includes.iter().map(|i| i.trim())) {
        if seen.insert(i.split_whitespace().collect::<Vec<_>>().join(" ")) {
            src.push_str(i);
            src.push('\n');
        }
    }
    src.push_str("int main(void) {\n");
    for l in body {
        src.push_str("    ");
        src.push_str(l);
        src.push('\n');
    }
    src.push_str("    return 0;\n}\n");
    src
}

/// The Rust samples as one program: `prog N` runs sample N.
fn rust_source(samples: &[&Sample]) -> String {
    let mut src = String::from("#![allow(unused, clippy::all)]\n");
    for (i, s) in samples.iter().enumerate() {
        let code: String = s
            .code
            .lines()
            .map(|l| {
                let t = l.trim_start();
                if t == "#" {
                    ""
                } else {
                    t.strip_prefix("# ").map_or(l, |_| &l[l.find("# ").unwrap() + 2..])
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        writeln!(src, "// {}", s.at).unwrap();
        if code.contains("fn main") {
            writeln!(src, "mod sample_{i} {{\n{code}\n}}\nfn sample_{i}() -> Result<(), Box<dyn std::error::Error>> {{ sample_{i}::main(); Ok(()) }}").unwrap();
        } else {
            writeln!(src, "fn sample_{i}() -> Result<(), Box<dyn std::error::Error>> {{\n{code}\nOk(())\n}}").unwrap();
        }
    }
    src.push_str(
        "fn main() {\n    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();\n    let r = match n {\n",
    );
    for i in 0..samples.len() {
        writeln!(src, "        {i} => sample_{i}(),").unwrap();
    }
    src.push_str("        _ => unreachable!(),\n    };\n    if let Err(e) = r {\n        eprintln!(\"error: {e}\");\n        std::process::exit(1);\n    }\n}\n");
    src
}

#[test]
fn samples_run() {
    let r = root();
    let bin = common::profile_dir();
    common::check_library_is_current(&bin);
    let work = r.join("target/docs-samples");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(work.join("build")).unwrap();
    let (samples, mut problems) = samples();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for s in &samples {
        let mode = match &s.mode {
            Mode::Run => "run",
            Mode::NoRun => "no_run",
            Mode::Ci(_) => "ci",
        };
        *counts.entry(format!("{} {mode}", if s.lang.is_empty() { "text" } else { &s.lang })).or_default() += 1;
    }
    eprintln!("docs samples: {counts:?}");

    // Checks that run nothing.
    let mut help = HashMap::new();
    for s in &samples {
        if let Mode::Ci(f) = &s.mode {
            if let Err(e) = check_ci(s, f) {
                problems.push(format!("{}: {e}", s.at));
            }
        }
        if s.lang == "sh" {
            for p in check_sh_static(s, &bin, &mut help) {
                problems.push(format!("{}: {p}", s.at));
            }
        }
    }

    // Compile the C samples (in parallel) and the Rust ones (one program).
    let include = r.join("include");
    let blosc_include = r.join("target/blosc2/include");
    let c: Vec<(usize, &Sample)> = samples.iter().enumerate().filter(|(_, s)| s.lang == "c").collect();
    let compiled: Vec<(usize, Result<PathBuf, String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = c
            .iter()
            .map(|&(i, s)| {
                let (work, include, blosc_include, bin) = (&work, &include, &blosc_include, &bin);
                scope.spawn(move || {
                    let src = work.join(format!("build/c{i}.c"));
                    let exe = work.join(format!("build/c{i}"));
                    std::fs::write(&src, c_source(&s.code)).unwrap();
                    let o = Command::new("cc")
                        .args(["-std=c99", "-Wall", "-Werror", "-Wno-unused-variable", "-Wno-unused-but-set-variable"])
                        .arg(&src)
                        .arg("-o")
                        .arg(&exe)
                        .arg(format!("-I{}", include.display()))
                        .arg(format!("-I{}", blosc_include.display()))
                        .arg(format!("-L{}", bin.display()))
                        .arg(format!("-Wl,-rpath,{}", bin.display()))
                        .args(["-lcaterva", "-lblosc2"])
                        .output()
                        .expect("cc runs");
                    (i, if o.status.success() { Ok(exe) } else { Err(format!("cc {}:\n{}", src.display(), show(&o))) })
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut c_exe: HashMap<usize, PathBuf> = HashMap::new();
    for (i, res) in compiled {
        match res {
            Ok(exe) => {
                c_exe.insert(i, exe);
            }
            Err(e) => problems.push(format!("{}: {e}", samples[i].at)),
        }
    }
    let rust: Vec<(usize, &Sample)> = samples.iter().enumerate().filter(|(_, s)| s.lang == "rust").collect();
    let mut rust_index: HashMap<usize, usize> = HashMap::new();
    let mut rust_exe = None;
    if !rust.is_empty() {
        let src = work.join("build/samples.rs");
        std::fs::write(&src, rust_source(&rust.iter().map(|(_, s)| *s).collect::<Vec<_>>())).unwrap();
        let exe = work.join("build/rust-samples");
        let o = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--edition", "2021", "-C", "debuginfo=0", "--crate-name", "docs_samples"])
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .arg("--extern")
            .arg(format!("caterva={}", bin.join("libcaterva.rlib").display()))
            .arg("-L")
            .arg(format!("dependency={}", bin.join("deps").display()))
            .arg("-L")
            .arg(format!("native={}", bin.display()))
            .arg("-C")
            .arg(format!("link-args=-Wl,-rpath,{}", bin.display()))
            .output()
            .expect("rustc runs");
        if o.status.success() {
            rust_exe = Some(exe);
        } else {
            problems.push(format!("rustc {}:\n{}", src.display(), show(&o)));
        }
        for (n, (i, _)) in rust.iter().enumerate() {
            rust_index.insert(*i, n);
        }
    }

    // Python: this tree's package, built into the venv as tests/python.rs does.
    let python = samples.iter().any(|s| s.lang == "python").then(common::pycaterva_python);
    if let Some(py) = &python {
        for s in samples.iter().filter(|s| s.lang == "python" && s.mode == Mode::NoRun) {
            let o = Command::new(py)
                .args(["-c", "import sys; compile(sys.stdin.read(), sys.argv[1], 'exec')", &s.at])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(s.code.as_bytes())?;
                    c.wait_with_output()
                })
                .expect("python runs");
            if !o.status.success() {
                problems.push(format!("{}: does not compile:\n{}", s.at, show(&o)));
            }
        }
    }

    // Run, page by page, each page's blocks in order in its own directory.
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut failed_pages = HashSet::new();
    for (i, s) in samples.iter().enumerate() {
        if s.mode != Mode::Run || s.lang.is_empty() || s.lang == "text" || failed_pages.contains(&s.page) {
            continue;
        }
        let dir = work.join(&s.page);
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(name) = &s.setup {
            if let Err(e) = setup(name, &dir) {
                problems.push(format!("{}: setup={name}: {e}", s.at));
                failed_pages.insert(s.page.clone());
                continue;
            }
        }
        let mut cmd = match s.lang.as_str() {
            "c" => match c_exe.get(&i) {
                Some(exe) => {
                    let mut c = Command::new(exe);
                    c.env("CATERVA_TRACE", "1");
                    c
                }
                None => continue, // reported at compile time
            },
            "rust" => match &rust_exe {
                Some(exe) => {
                    let mut c = Command::new(exe);
                    c.arg(rust_index[&i].to_string()).env("LD_LIBRARY_PATH", &bin);
                    c
                }
                None => continue,
            },
            "python" => {
                let file = dir.join(format!("sample-{i}.py"));
                std::fs::write(&file, &s.code).unwrap();
                let mut c = Command::new(python.as_ref().unwrap());
                c.arg(&file);
                c
            }
            "sh" => {
                let mut c = Command::new("bash");
                c.args(["-e", "-o", "pipefail", "-c", &s.code]);
                c
            }
            other => unreachable!("{other}"),
        };
        let started = std::time::Instant::now();
        let o = cmd.current_dir(&dir).env("PATH", &path).stdin(Stdio::null()).output().expect("sample starts");
        eprintln!("docs sample {}: ```{} ran in {:.2} s", s.at, s.lang, started.elapsed().as_secs_f64());
        let quiet = s.lang != "c" || o.stderr.is_empty();
        if !o.status.success() || !quiet {
            problems.push(format!("{}: ```{} failed (in {}):\n{}", s.at, s.lang, dir.display(), show(&o)));
            failed_pages.insert(s.page.clone());
        }
    }
    assert!(problems.is_empty(), "documentation samples:\n{}", problems.join("\n\n"));
}
