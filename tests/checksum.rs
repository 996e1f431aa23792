//! Per-chunk checksums: kept current by every write, carried by reopen,
//! copies and frames, and a flipped bit is reported, never returned as data.

mod common;

use caterva::testing::CHECKSUM_VLMETA;
use caterva::{Array, Config, Context, Error, Params, StorageParams};

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap()
}

/// Items of 4 bytes that compress a little, so chunks are mostly payload.
fn items(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .flat_map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((i as u32 / 3) ^ (x as u32 & 0xff)).to_le_bytes()
        })
        .collect()
}

fn storage(url: Option<String>, contiguous: bool) -> StorageParams {
    StorageParams { chunkshape: vec![8, 7], blockshape: vec![3, 4], contiguous, urlpath: url, ..Default::default() }
}

fn storages(tag: &str) -> Vec<StorageParams> {
    let dir = common::scratch_dir(&format!("checksum-{tag}"));
    let path = |n: &str| Some(dir.join(n).to_string_lossy().into_owned());
    vec![storage(None, false), storage(None, true), storage(path("a.b2frame"), true), storage(path("a.b2nd"), false)]
}

/// Apply the same writes to `arr` and to `reference` (an array without
/// checksums), comparing contents and the stored table after each.
fn same_writes(arr: &mut Array, reference: &mut Array) {
    let check = |arr: &Array, reference: &Array, what: &str| {
        assert_eq!(arr.to_vec().unwrap(), reference.to_vec().unwrap(), "{what}");
        assert!(arr.has_checksums(), "{what}");
        assert!(arr.vlmeta_exists(CHECKSUM_VLMETA).unwrap(), "{what}");
    };
    check(arr, reference, "created");
    let patch = items(5 * 9, 7);
    for a in [&mut *arr, &mut *reference] {
        a.set_slice_buffer(&[3, 4], &[8, 13], &patch, &[5, 9]).unwrap();
    }
    check(arr, reference, "set_slice_buffer");
    let slab = items(3 * 20, 8);
    for a in [&mut *arr, &mut *reference] {
        a.append(&slab, 0).unwrap();
    }
    check(arr, reference, "append");
    let col = items(33 * 2, 9);
    for a in [&mut *arr, &mut *reference] {
        a.insert(&col, 1, 5).unwrap();
    }
    check(arr, reference, "insert");
    for a in [&mut *arr, &mut *reference] {
        a.delete(0, 2, 9).unwrap();
    }
    check(arr, reference, "delete");
    for a in [&mut *arr, &mut *reference] {
        a.resize(&[40, 15], None).unwrap();
    }
    check(arr, reference, "resize");
    let sel: [&[i64]; 2] = [&[39, 0, 17], &[14, 3]];
    let vals = items(6, 10);
    for a in [&mut *arr, &mut *reference] {
        a.set_orthogonal_selection(&sel, &vals, &[3, 2]).unwrap();
    }
    check(arr, reference, "set_orthogonal_selection");
}

#[test]
fn checksums_follow_every_write_and_travel_with_the_array() {
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 1);
    for st in storages("writes") {
        let mut arr = Array::from_buffer(&ctx(true), &params, &st, &data).unwrap();
        let mut reference = Array::from_buffer(&ctx(false), &params, &storage(None, false), &data).unwrap();
        assert!(!reference.has_checksums());
        same_writes(&mut arr, &mut reference);
        let want = reference.to_vec().unwrap();

        let again = match &st.urlpath {
            Some(url) => {
                drop(arr);
                Array::open(&ctx(false), url).unwrap()
            }
            None => Array::from_cframe(&ctx(false), &arr.to_cframe().unwrap()).unwrap(),
        };
        assert!(again.has_checksums(), "{st:?}");
        assert_eq!(again.to_vec().unwrap(), want, "{st:?}");

        // Copies keep them (recompressed or not), even with a context that does not ask.
        let same = StorageParams { chunkshape: vec![8, 7], blockshape: vec![3, 4], ..Default::default() };
        let other = StorageParams { chunkshape: vec![5, 5], blockshape: vec![5, 2], ..Default::default() };
        for target in [same, other] {
            let c = again.copy(&ctx(false), &target).unwrap();
            assert!(c.has_checksums());
            assert_eq!(c.to_vec().unwrap(), want);
        }
        let s = again.get_slice(&ctx(false), &[1, 1], &[20, 9], &storage(None, true)).unwrap();
        assert!(s.has_checksums());
    }
}

#[test]
fn checksums_can_be_added_to_an_existing_array_and_are_reserved() {
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let dir = common::scratch_dir("checksum-enable");
    let url = dir.join("a.b2frame").to_string_lossy().into_owned();
    let data = items(600, 2);
    let mut arr = Array::from_buffer(&ctx(false), &params, &storage(Some(url.clone()), true), &data).unwrap();
    assert!(!arr.has_checksums());
    arr.enable_checksums().unwrap();
    drop(arr);
    let mut arr = Array::open(&ctx(false), &url).unwrap();
    assert!(arr.has_checksums());
    assert_eq!(arr.to_vec().unwrap(), data);
    for r in [arr.vlmeta_add(CHECKSUM_VLMETA, b"x"), arr.vlmeta_update(CHECKSUM_VLMETA, b"x")] {
        assert!(matches!(r, Err(Error::InvalidArgument(_))), "{r:?}");
    }
}

/// Where `needle` sits in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).expect("chunk bytes are in the file")
}

/// Flip one bit at each of `n` positions of chunk 0's payload in a copy of
/// the file, and read the copy: (errors, right data, wrong data).
fn flip_chunk_bits(src: &str, dir: &std::path::Path, checksums: bool, n: usize) -> (usize, usize, usize) {
    let c = ctx(checksums);
    let orig = Array::open(&c, src).unwrap();
    let want = orig.to_vec().unwrap();
    let chunk = caterva::testing::chunk(&orig, 0).unwrap();
    drop(orig);
    let bytes = std::fs::read(src).unwrap();
    let at = find(&bytes, &chunk);
    // The last half of the chunk: codec payload, which c-blosc2 itself never checks.
    let payload = chunk.len() / 2..chunk.len();
    let (mut errors, mut right, mut wrong) = (0, 0, 0);
    for k in 0..n {
        let pos = at + payload.start + (k * 7919) % payload.len();
        let mut b = bytes.clone();
        b[pos] ^= 1 << (k % 8);
        let path = dir.join(format!("flip-{checksums}-{k}.b2frame"));
        std::fs::write(&path, &b).unwrap();
        match Array::open(&c, path.to_str().unwrap()).and_then(|a| a.to_vec()) {
            Err(_) => errors += 1,
            Ok(v) if v == want => right += 1,
            Ok(_) => wrong += 1,
        }
        std::fs::remove_file(&path).unwrap();
    }
    (errors, right, wrong)
}

#[test]
fn flipped_bits_are_reported_not_returned() {
    let dir = common::scratch_dir("checksum-flip");
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 3);
    let mut outcomes = Vec::new();
    for checksums in [false, true] {
        let url = dir.join(format!("src-{checksums}.b2frame")).to_string_lossy().into_owned();
        let st = storage(Some(url.clone()), true);
        let c = Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap();
        Array::from_buffer(&c, &params, &st, &data).unwrap();
        outcomes.push(flip_chunk_bits(&url, &dir, checksums, 200));
    }
    let (without, with) = (outcomes[0], outcomes[1]);
    eprintln!("flips (errors, right data, wrong data): without checksums {without:?}, with {with:?}");
    // The flips do corrupt data when nothing checks them...
    assert!(without.2 > 0, "{without:?}");
    // ...and never get through when checksums are on.
    assert_eq!(with.2, 0, "{with:?}");
    assert_eq!(with.0 + with.1, 200);
}

#[test]
fn a_bad_sum_names_the_chunk() {
    let dir = common::scratch_dir("checksum-name");
    let url = dir.join("a.b2nd").to_string_lossy().into_owned();
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 4);
    Array::from_buffer(&ctx(true), &params, &storage(Some(url.clone()), false), &data).unwrap();
    // Chunk 5 of a sparse frame is the file 00000005.chunk.
    let f = std::path::Path::new(&url).join("00000005.chunk");
    let mut b = std::fs::read(&f).unwrap();
    let last = b.len() - 1;
    b[last] ^= 0x10;
    std::fs::write(&f, b).unwrap();
    let arr = Array::open(&ctx(false), &url).unwrap();
    let e = arr.to_vec().unwrap_err();
    assert!(matches!(&e, Error::Corrupt { chunk: 5, .. }), "{e}");
    assert_eq!(e.kind(), caterva::ErrorKind::Corrupt);
    // A region away from chunk 5 still reads.
    let mut row = vec![0u8; 20 * 4];
    arr.get_slice_buffer(&[0, 0], &[1, 20], &mut row, &[1, 20]).unwrap();
    assert_eq!(row, data[..80]);
}

// ---------------------------------------------------------------------------
// Every byte of a small checksummed frame, damaged: never wrong data, never
// an array that reads as if it had no checksums.

/// Everything a reader sees of an array.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    data: Vec<u8>,
    shape: Vec<i64>,
    dtype: Option<String>,
    meta: Vec<(String, Option<Vec<u8>>)>,
    vlmeta: Vec<(String, Option<Vec<u8>>)>,
    checksums: bool,
}

/// Open-and-read, everything: the data, the shape and dtype, every metalayer and vlmetalayer.
fn seen(arr: caterva::Result<Array>) -> caterva::Result<Seen> {
    let arr = arr?;
    let info = arr.info();
    // A name that is not UTF-8 cannot be asked for (the list has it with
    // U+FFFD): its content is None, not an error of the array.
    let unaddressable = |e: Error| if e.kind() == caterva::ErrorKind::InvalidArgument { Ok(None) } else { Err(e) };
    let meta = info
        .metalayers
        .iter()
        .map(|n| arr.meta_get(n).map(Some).or_else(unaddressable).map(|c| (n.clone(), c)))
        .collect::<Result<_, _>>()?;
    let vlmeta = info
        .vlmetalayers
        .iter()
        .map(|n| arr.vlmeta_get(n).map(Some).or_else(unaddressable).map(|c| (n.clone(), c)))
        .collect::<Result<_, _>>()?;
    Ok(Seen {
        data: arr.to_vec()?,
        shape: arr.shape().to_vec(),
        dtype: arr.dtype(),
        meta,
        vlmeta,
        checksums: arr.has_checksums(),
    })
}

/// What became of the damaged copies.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    /// Opened and read exactly as the original, checksums and all.
    identical: usize,
    /// Refused with an error, at open or on a read.
    refused: usize,
    /// Read as an array without checksums.
    unchecked: usize,
    /// Other data than the original's.
    wrong_data: usize,
    /// The data right, but other metadata (shape, dtype, metalayers).
    wrong_meta: usize,
}

impl Tally {
    fn add(&mut self, want: &Seen, got: caterva::Result<Seen>) -> &'static str {
        let (slot, what) = match got {
            Err(_) => (&mut self.refused, "refused"),
            Ok(s) if !s.checksums => (&mut self.unchecked, "unchecked"),
            Ok(s) if s.data != want.data => (&mut self.wrong_data, "wrong data"),
            Ok(s) if s != *want => (&mut self.wrong_meta, "wrong metadata"),
            Ok(_) => (&mut self.identical, "identical"),
        };
        *slot += 1;
        what
    }
    fn total(&self) -> usize {
        self.identical + self.refused + self.unchecked + self.wrong_data + self.wrong_meta
    }
}

/// One damage: a byte position and either the bits to flip or the value to write.
#[derive(Clone, Copy, Debug)]
enum Damage {
    Flip(usize, u8),
    Set(usize, u8),
}

impl Damage {
    /// Every bit of a `len`-byte file flipped alone, then every byte set to
    /// 0x00 and to 0xff.
    fn all(len: usize) -> impl Iterator<Item = Damage> {
        let flips = (0..len).flat_map(|at| (0..8).map(move |bit| Damage::Flip(at, 1 << bit)));
        flips.chain((0..len).flat_map(|at| [Damage::Set(at, 0x00), Damage::Set(at, 0xff)]))
    }

    fn at(self) -> usize {
        match self {
            Damage::Flip(at, _) | Damage::Set(at, _) => at,
        }
    }

    /// `bytes` with this damage, unless it leaves them as they are.
    fn apply(self, bytes: &[u8]) -> Option<Vec<u8>> {
        let mut b = bytes.to_vec();
        match self {
            Damage::Flip(at, mask) => b[at] ^= mask,
            Damage::Set(at, v) => b[at] = v,
        }
        (b != bytes).then_some(b)
    }
}

/// The small array of the damage tests: 6 chunks, a user metalayer and a
/// vlmetalayer, checksums on (from the start, or added to a file that
/// already holds its chunks: then its header has no marker).
fn small(storage: &StorageParams, added_later: bool) -> Array {
    let params = Params { itemsize: 4, shape: vec![10, 7], dtype: Some("<i4".into()) };
    let st = StorageParams {
        chunkshape: vec![4, 4],
        blockshape: vec![2, 2],
        metalayers: vec![caterva::Metalayer { name: "units".into(), content: b"\xa3m/s".to_vec() }],
        ..storage.clone()
    };
    let mut arr = Array::from_buffer(&ctx(!added_later), &params, &st, &items(70, 11)).unwrap();
    arr.vlmeta_add("history", b"\xa7written").unwrap();
    if added_later {
        arr.enable_checksums().unwrap();
    }
    assert!(arr.has_checksums());
    assert_eq!(arr.meta_exists(caterva::testing::CHECKSUM_MARKER), !added_later || storage.urlpath.is_none());
    arr
}

/// The damage tests' subjects, written in `dir`: (what, urlpath, the file to damage).
fn subjects(dir: &std::path::Path) -> Vec<(&'static str, String, std::path::PathBuf)> {
    let cases = [("frame file", "a.b2frame", true, false), ("sparse frame index", "a.b2nd", false, false)];
    let later = [("frame file, checksums added later (no marker)", "later.b2frame", true, true)];
    cases
        .into_iter()
        .chain(later)
        .map(|(what, name, contiguous, added_later)| {
            let url = dir.join(name).to_string_lossy().into_owned();
            drop(small(&StorageParams { contiguous, urlpath: Some(url.clone()), ..Default::default() }, added_later));
            let file = if contiguous { url.clone().into() } else { std::path::Path::new(&url).join("chunks.b2frame") };
            (what, url, file)
        })
        .collect()
}

/// Damage `file` in every way of [`Damage::all`] in turn, opening and
/// reading `url` after each; `file` is restored after. The outcomes of the
/// bit flips, and of the bytes set.
fn damage_every_byte(what: &str, url: &str, file: &std::path::Path) -> (Tally, Tally) {
    let c = ctx(false);
    let want = seen(Array::open(&c, url)).unwrap();
    assert!(want.checksums);
    let bytes = std::fs::read(file).unwrap();
    let (mut flips, mut sets) = (Tally::default(), Tally::default());
    // Runs of positions with the same bad outcome: (first, last, outcome, count).
    let mut bad: Vec<(usize, usize, &str, usize)> = Vec::new();
    for d in Damage::all(bytes.len()) {
        let Some(b) = d.apply(&bytes) else { continue };
        std::fs::write(file, &b).unwrap();
        let tally = if matches!(d, Damage::Flip(..)) { &mut flips } else { &mut sets };
        let outcome = tally.add(&want, seen(Array::open(&c, url)));
        if outcome != "identical" && outcome != "refused" {
            let at = d.at();
            match bad.iter_mut().find(|r| r.2 == outcome && r.0 <= at && at <= r.1 + 1) {
                Some(r) => (r.1, r.3) = (r.1.max(at), r.3 + 1),
                None => bad.push((at, at, outcome, 1)),
            }
        }
    }
    std::fs::write(file, &bytes).unwrap();
    eprintln!(
        "{what} ({} bytes):\n  {} bit flips: {flips:?}\n  {} bytes set: {sets:?}",
        bytes.len(),
        flips.total(),
        sets.total()
    );
    for (first, last, outcome, n) in &bad {
        eprintln!("  bytes {first}..={last}: {outcome} ({n})");
    }
    (flips, sets)
}

#[test]
fn no_damaged_byte_of_a_frame_reads_wrong_or_unchecked() {
    let dir = common::scratch_dir("checksum-every-byte");
    let mut tallies = Vec::new();
    for (what, url, file) in subjects(&dir) {
        let (flips, sets) = damage_every_byte(what, &url, &file);
        tallies.extend([(what, "flips", flips), (what, "sets", sets)]);
    }
    for (what, how, t) in tallies {
        assert_eq!((t.unchecked, t.wrong_data, t.wrong_meta), (0, 0, 0), "{what}, {how}: {t:?}");
        assert!(t.identical > 0 && t.refused > 0, "{what}, {how}: {t:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Arrays holding special chunks, as written in memory, then read back from
/// a frame and from a file: c-blosc2 rebuilds a special chunk from a frame
/// with another header (same content, other bytes), which must not fail its
/// checksum.
#[test]
fn special_chunks_keep_their_checksums_through_frames_and_files() {
    let dir = common::scratch_dir("checksum-special");
    let params = Params { itemsize: 4, shape: vec![16, 14], dtype: None };
    for contiguous in [false, true] {
        type Change = fn(&mut Array);
        let changes: [(&str, Change); 3] = [
            ("zeros over chunk 0", |a| a.set_slice_buffer(&[0, 0], &[8, 7], &[0; 8 * 7 * 4], &[8, 7]).unwrap()),
            ("resize, then delete", |a| {
                a.resize(&[24, 21], None).unwrap();
                a.delete(0, 0, 8).unwrap();
            }),
            ("zeros everywhere", |a| a.set_slice_buffer(&[0, 0], &[16, 14], &[0; 16 * 14 * 4], &[16, 14]).unwrap()),
        ];
        for (what, change) in changes {
            let st = StorageParams { chunkshape: vec![8, 7], blockshape: vec![4, 4], contiguous, ..Default::default() };
            let mut arr = Array::from_buffer(&ctx(true), &params, &st, &items(16 * 14, 5)).unwrap();
            change(&mut arr);
            let want = arr.to_vec().unwrap();
            assert!(arr.verify(&mut |_, _| {}).unwrap().is_empty(), "{what}");
            let framed = Array::from_cframe(&ctx(false), &arr.to_cframe().unwrap()).unwrap();
            assert_eq!(framed.to_vec().unwrap(), want, "{what}, contiguous {contiguous}: from_cframe");
            let url = dir.join(format!("{}.{contiguous}", what.replace(' ', "-"))).to_string_lossy().into_owned();
            arr.save(&url).unwrap();
            let opened = Array::open(&ctx(false), &url).unwrap();
            assert!(opened.has_checksums());
            assert_eq!(opened.to_vec().unwrap(), want, "{what}, contiguous {contiguous}: save, open");
            assert!(opened.verify(&mut |_, _| {}).unwrap().is_empty(), "{what}");
        }
    }
}

/// `bytes` with the `nth` occurrence (0: first; usize::MAX: last) of `from` replaced by `to`.
fn replaced(bytes: &[u8], from: &[u8], to: &[u8], nth: usize) -> Vec<u8> {
    let found: Vec<usize> = (0..=bytes.len() - from.len()).filter(|&i| bytes[i..i + from.len()] == *from).collect();
    let at = if nth == usize::MAX { *found.last().unwrap() } else { found[nth] };
    let mut b = bytes.to_vec();
    b[at..at + from.len()].copy_from_slice(to);
    b
}

/// The table's name damaged as users found it (issue 13): the array is
/// refused as corrupt, naming the damaged name, with or without the marker
/// in the header; so is a damaged marker name, and a damaged user metalayer.
#[test]
fn damaged_names_are_recognised() {
    let dir = common::scratch_dir("checksum-names");
    let name = b"caterva.xxh3";
    for (what, url, file) in subjects(&dir) {
        if file.is_dir() || url.ends_with(".b2nd") {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap();
        let marker = what == "frame file";
        let target = dir.join("damaged.b2frame");
        let open = |b: &[u8]| {
            std::fs::write(&target, b).unwrap();
            Array::open(&ctx(false), target.to_str().unwrap()).map(drop)
        };
        let corrupt = |r: caterva::Result<()>, want: &str, case: &str| match r {
            Err(Error::Corrupt { chunk: -1, reason }) => {
                assert!(reason.contains(want) && !reason.contains("  "), "{what}, {case}: {reason}")
            }
            other => panic!("{what}, {case}: {other:?}"),
        };
        // The table's name is the last occurrence; the marker's (if any) the first.
        for damaged in [&b"cater\xf6a.xxh3"[..], b"katerva.xxh3", b"caterva.8xh3"] {
            let case = String::from_utf8_lossy(damaged).into_owned();
            let want = if marker {
                "the header's metalayer 'caterva.xxh3' says it keeps checksums"
            } else {
                "is the table with a damaged name"
            };
            corrupt(open(&replaced(&bytes, name, damaged, usize::MAX)), want, &case);
            // Also through a frame buffer.
            let r = Array::from_cframe(&ctx(false), &replaced(&bytes, name, damaged, usize::MAX)).map(drop);
            corrupt(r, "its checksum table (vlmetalayer 'caterva.xxh3') is missing", &case);
            if marker {
                corrupt(
                    open(&replaced(&bytes, name, damaged, 0)),
                    "checksum marker (metalayer 'caterva.xxh3') is missing",
                    &case,
                );
            }
        }
        // A user metalayer and vlmetalayer renamed, or changed.
        corrupt(
            open(&replaced(&bytes, b"units", b"unitz", 0)),
            "metalayer 'units', recorded in the checksum table, is missing (metalayer 'unitz' may be it",
            "units",
        );
        corrupt(open(&replaced(&bytes, b"m/s", b"m/h", 0)), "metalayer 'units' differs from its record", "m/s");
        corrupt(
            open(&replaced(&bytes, b"history", b"histosy", 0)),
            "vlmetalayer 'history', recorded in the checksum table, is missing",
            "history",
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Users cannot make names that readers would take for a damaged table or marker.
#[test]
fn names_one_character_off_the_table_are_reserved() {
    let mut arr = small(&StorageParams::default(), false);
    for name in ["caterva.xxh4", "katerva.xxh3", "caterva.xxh3"] {
        assert!(matches!(arr.vlmeta_add(name, b"x"), Err(Error::InvalidArgument(_))), "{name}");
    }
    let params = Params { itemsize: 1, shape: vec![4], dtype: None };
    for name in ["caterva.xxh4", "caterva.xxh3", "caterva", "b2nd"] {
        let st = StorageParams {
            chunkshape: vec![2],
            blockshape: vec![2],
            metalayers: vec![caterva::Metalayer { name: name.into(), content: b"x".to_vec() }],
            ..Default::default()
        };
        assert!(matches!(Array::zeros(&ctx(false), &params, &st), Err(Error::InvalidArgument(_))), "{name}");
    }
    assert!(matches!(
        arr.meta_update(caterva::testing::CHECKSUM_MARKER, b"\xc4\x01\x00"),
        Err(Error::InvalidArgument(_))
    ));
}

/// `Config::require_checksums`: arrays without a table are refused, arrays
/// made with the context keep checksums.
#[test]
fn required_checksums_refuse_arrays_without_them() {
    let dir = common::scratch_dir("checksum-require");
    let strict = Context::new(Config { nthreads: 2, require_checksums: true, ..Config::default() }).unwrap();
    let params = Params { itemsize: 4, shape: vec![30, 20], dtype: None };
    let data = items(600, 6);
    for contiguous in [true, false] {
        let url = dir.join(format!("plain-{contiguous}")).to_string_lossy().into_owned();
        let plain = Array::from_buffer(&ctx(false), &params, &storage(Some(url.clone()), contiguous), &data).unwrap();
        let frame = plain.to_cframe().unwrap();
        drop(plain);
        for r in [Array::open(&strict, &url), Array::from_cframe(&strict, &frame)] {
            match r {
                Err(e @ Error::Corrupt { chunk: -1, .. }) => {
                    assert!(e.to_string().contains("requires checksums"), "{e}")
                }
                other => panic!("{other:?}"),
            }
        }
        // The same array with checksums added opens.
        let mut a = Array::open(&ctx(false), &url).unwrap();
        a.enable_checksums().unwrap();
        drop(a);
        assert_eq!(Array::open(&strict, &url).unwrap().to_vec().unwrap(), data);
        // Arrays made with the strict context keep checksums, and open with it.
        let url = dir.join(format!("strict-{contiguous}")).to_string_lossy().into_owned();
        let made = Array::from_buffer(&strict, &params, &storage(Some(url.clone()), contiguous), &data).unwrap();
        assert!(made.has_checksums());
        let frame = made.to_cframe().unwrap();
        drop(made);
        assert!(Array::open(&strict, &url).unwrap().has_checksums());
        assert!(Array::from_cframe(&strict, &frame).unwrap().has_checksums());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file written before version 2 (`tests/data/checksums-v1.b2frame`: the
/// array of [`small`], chunk 0 then overwritten with zeros and the
/// vlmetalayer updated, by caterva-rs at fcef8a0) reads as before; writes keep
/// its table at version 1; `enable_checksums` checks it, then upgrades it.
#[test]
fn version_1_tables_are_read_as_before() {
    let dir = common::scratch_dir("checksum-v1");
    let url = dir.join("v1.b2frame").to_string_lossy().into_owned();
    std::fs::copy(common::manifest_dir().join("tests/data/checksums-v1.b2frame"), &url).unwrap();
    let version = |a: &Array| a.vlmeta_get(CHECKSUM_VLMETA).unwrap()[2];
    let mut want = items(70, 11);
    for row in 0..4 {
        want[row * 28..row * 28 + 16].fill(0);
    }
    let mut arr = Array::open(&ctx(false), &url).unwrap();
    assert!(arr.has_checksums());
    assert_eq!(version(&arr), 1);
    assert!(!arr.meta_exists(caterva::testing::CHECKSUM_MARKER));
    assert_eq!(arr.to_vec().unwrap(), want);
    assert_eq!(arr.vlmeta_get("history").unwrap(), b"\xa8written!");
    assert!(arr.verify(&mut |_, _| {}).unwrap().is_empty());
    // A damaged chunk is still caught.
    let chunk = caterva::testing::chunk(&arr, 2).unwrap();
    let mut bytes = std::fs::read(&url).unwrap();
    let at = find(&bytes, &chunk) + chunk.len() - 1;
    bytes[at] ^= 0x04;
    let damaged = dir.join("damaged.b2frame");
    std::fs::write(&damaged, &bytes).unwrap();
    let e = Array::open(&ctx(false), damaged.to_str().unwrap()).unwrap().to_vec().unwrap_err();
    assert!(matches!(e, Error::Corrupt { chunk: 2, .. }), "{e}");
    // Writes keep version 1.
    arr.set_slice_buffer(&[9, 6], &[10, 7], &[7; 4], &[1, 1]).unwrap();
    want[9 * 28 + 24..].copy_from_slice(&[7; 4]);
    drop(arr);
    let mut arr = Array::open(&ctx(false), &url).unwrap();
    assert_eq!((version(&arr), arr.to_vec().unwrap()), (1, want.clone()));
    // enable_checksums upgrades (no marker: the file holds chunks).
    arr.enable_checksums().unwrap();
    drop(arr);
    let arr = Array::open(&ctx(false), &url).unwrap();
    assert_eq!((version(&arr), arr.to_vec().unwrap()), (2, want));
    assert!(!arr.meta_exists(caterva::testing::CHECKSUM_MARKER));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `enable_checksums` does not bless damage: a version-1 table whose chunk
/// fails is not upgraded.
#[test]
fn upgrading_a_damaged_version_1_table_fails() {
    let dir = common::scratch_dir("checksum-v1-damaged");
    let url = dir.join("v1.b2frame").to_string_lossy().into_owned();
    let mut bytes = std::fs::read(common::manifest_dir().join("tests/data/checksums-v1.b2frame")).unwrap();
    let chunk = caterva::testing::chunk(&Array::from_cframe(&ctx(false), &bytes).unwrap(), 3).unwrap();
    let at = find(&bytes, &chunk) + chunk.len() - 1;
    bytes[at] ^= 0x01;
    std::fs::write(&url, &bytes).unwrap();
    let mut arr = Array::open(&ctx(false), &url).unwrap();
    let e = arr.enable_checksums().unwrap_err();
    assert!(matches!(e, Error::Corrupt { chunk: 3, .. }), "{e}");
    drop(arr);
    assert_eq!(std::fs::read(&url).unwrap(), bytes, "left as it was");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A checksum table larger than readers accept (the metadata bound that
/// keeps hostile files from making c-blosc2 allocate gigabytes at open) is
/// never written: the creation that would need it fails and leaves nothing
/// at the path, instead of writing an array nobody can reopen.
#[test]
fn a_table_too_large_to_reopen_is_refused_when_written() {
    let dir = common::scratch_dir("checksum-huge-table");
    let url = dir.join("huge.b2frame").to_string_lossy().into_owned();
    let st = StorageParams {
        chunkshape: vec![1],
        blockshape: vec![1],
        contiguous: true,
        urlpath: Some(url.clone()),
        ..Default::default()
    };
    let huge = Params { itemsize: 1, shape: vec![2_200_000], dtype: None };
    match Array::zeros(&ctx(true), &huge, &st) {
        Err(Error::InvalidArgument(m)) => assert!(m.contains("too large for a checksum table"), "{m}"),
        other => panic!("{:?}", other.map(|a| a.shape().to_vec())),
    }
    assert!(!std::path::Path::new(&url).exists());
    // (Growing a checksummed array past the bound fails the same way, in
    // the transaction's commit; c-blosc2 appends chunks one index rewrite
    // at a time, too slow to show here.)
    std::fs::remove_dir_all(&dir).unwrap();
}
