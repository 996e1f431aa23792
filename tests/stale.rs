//! Readers beside writers, and handles that others changed (issue 38):
//! a read never returns a chunk half written or from a view that no longer
//! holds, and never reports damage that is not there.
//!
//! - `a_stale_handle_reads_or_is_told_to_refresh`: two handles of one
//!   array; 40 appends and item writes through one; the other's reads get
//!   [`ErrorKind::Changed`] (never a blosc2 or checksum error), its writes
//!   go into the array as it is now.
//! - `soak`: 4 writer and 4 reader processes on one array, on a frame file
//!   and a directory, with and without checksums, at both durabilities.
//!   Every row a writer writes holds its stamp (`gen * 64 + column`), so a
//!   reader proves from the values alone that each row it read is whole.
//!   An oracle of committed writes checks the end state. Two seconds per
//!   case; `CATERVA_SOAK_SECONDS=60 cargo test --release --test stale soak
//!   -- --nocapture` for the long run.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use caterva::{Array, Config, Context, Durability, ErrorKind, Params, StorageParams};

const COLS: i64 = 16;
/// Rows that only the item writer writes: resizes and appends act past them.
const FIXED: i64 = 32;

fn ctx(checksums: bool) -> Context {
    Context::new(Config { nthreads: 2, checksums, ..Config::default() }).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("caterva-stale-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn create(dir: &Path, contiguous: bool, checksums: bool) -> String {
    let url = dir.join(if contiguous { "a.b2frame" } else { "a.b2nd" }).to_str().unwrap().to_owned();
    let params = Params { itemsize: 8, shape: vec![FIXED, COLS], dtype: Some("<u8".into()) };
    let storage = StorageParams {
        chunkshape: vec![8, COLS as i32],
        blockshape: vec![4, COLS as i32],
        contiguous,
        urlpath: Some(url.clone()),
        ..Default::default()
    };
    let mut a = Array::zeros(&ctx(checksums), &params, &storage).unwrap();
    a.vlmeta_add("stamp", b"0").unwrap();
    url
}

/// `n` rows stamped with `gen`.
fn rows(gen: u64, n: i64) -> Vec<u8> {
    (0..n).flat_map(|_| (0..COLS as u64).flat_map(move |c| (gen * 64 + c).to_le_bytes())).collect()
}

/// The generation of each row of `bytes` (0 for a row of zeros), or the
/// index of a row that is neither zeros nor one stamp throughout.
fn gens(bytes: &[u8]) -> Result<Vec<u64>, usize> {
    let items: Vec<u64> = bytes.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().unwrap())).collect();
    items
        .chunks_exact(COLS as usize)
        .enumerate()
        .map(|(i, row)| {
            if row.iter().all(|&v| v == 0) {
                return Ok(0);
            }
            let gen = row[0] / 64;
            let whole = row[0] % 64 == 0 && row.iter().enumerate().all(|(c, &v)| v == gen * 64 + c as u64);
            if whole {
                Ok(gen)
            } else {
                Err(i)
            }
        })
        .collect()
}

/// Whether `e` says the array is damaged (what a reader beside writers
/// must never be told).
fn says_damaged(e: &caterva::Error) -> bool {
    matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Blosc | ErrorKind::InvalidFormat)
}

#[test]
fn a_stale_handle_reads_or_is_told_to_refresh() {
    for contiguous in [true, false] {
        for checksums in [false, true] {
            let what = format!("contiguous {contiguous}, checksums {checksums}");
            let d = scratch(&format!("repro-{contiguous}-{checksums}"));
            let url = create(&d, contiguous, checksums);
            let mut h1 = Array::open(&ctx(checksums), &url).unwrap();
            let mut h2 = Array::open(&ctx(checksums), &url).unwrap();
            h1.to_vec().unwrap();
            // 40 appends and item writes through h2.
            for i in 0..40i64 {
                h2.append(&rows(1000 + i as u64, 1), 0).unwrap();
                h2.set_slice_buffer(&[i % FIXED, 0], &[i % FIXED + 1, COLS], &rows(2000 + i as u64, 1), &[1, COLS])
                    .unwrap();
            }
            // h1's reads: the refresh error, nothing else.
            for r in [
                h1.to_vec().map(drop),
                h1.get_slice_buffer(&[0, 0], &[8, COLS], &mut vec![0; 8 * COLS as usize * 8], &[8, COLS]),
            ] {
                let e = r.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::Changed, "{what}: {e}");
                assert!(e.to_string().contains("refresh"), "{e}");
            }
            // h1's writes go into the array as it is now: a row, then an append at its end.
            h1.set_slice_buffer(&[5, 0], &[6, COLS], &rows(3000, 1), &[1, COLS]).unwrap();
            assert_eq!(h1.shape()[0], FIXED + 40, "{what}: the write brought h1 up to date");
            h1.append(&rows(3001, 1), 0).unwrap();
            // h2 is stale now: refresh, then it reads what h1 wrote.
            assert_eq!(h2.to_vec().unwrap_err().kind(), ErrorKind::Changed, "{what}");
            assert!(h2.refresh().unwrap());
            let mut want: Vec<u64> = vec![0; FIXED as usize];
            for i in 0..40i64 {
                want[(i % FIXED) as usize] = 2000 + i as u64;
            }
            want[5] = 3000;
            want.extend((0..40).map(|i| 1000 + i as u64));
            want.push(3001);
            for h in [&h1, &h2, &Array::open(&ctx(checksums), &url).unwrap()] {
                assert_eq!(gens(&h.to_vec().unwrap()).unwrap(), want, "{what}");
            }
            drop((h1, h2));
            std::fs::remove_dir_all(&d).unwrap();
        }
    }
}

/// A chunk rewritten in place by another handle (same compressed size, no
/// checksums: the index does not change) is read whole, at its new
/// content, by a handle that cached the old blocks.
#[test]
fn a_chunk_rewritten_in_place_is_read_whole_at_its_new_content() {
    let d = scratch("in-place");
    let url = create(&d, true, false);
    let cached = Context::new(Config { nthreads: 2, block_cache: 1 << 20, ..Config::default() }).unwrap();
    let mut h1 = Array::open(&cached, &url).unwrap();
    let mut h2 = Array::open(&ctx(false), &url).unwrap();
    for gen in 1..50u64 {
        h2.set_slice_buffer(&[8, 0], &[16, COLS], &rows(gen, 8), &[8, COLS]).unwrap();
        match h1.to_vec() {
            Ok(v) => assert_eq!(gens(&v).unwrap()[8..16], [gen; 8], "generation {gen}"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Changed, "{e}");
                h1.refresh().unwrap();
                assert_eq!(gens(&h1.to_vec().unwrap()).unwrap()[8..16], [gen; 8], "generation {gen}");
            }
        }
    }
    drop((h1, h2));
    std::fs::remove_dir_all(&d).unwrap();
}

// The soak: the parent starts the roles as processes of this test binary
// (`CATERVA_SOAK_ROLE`), which print one line of counts each.

const ROLE: &str = "CATERVA_SOAK_ROLE";

#[derive(Default, Debug)]
struct Counts {
    reads: u64,
    refreshed: u64,
    refused: u64,
    torn: u64,
    damaged: u64,
    other: u64,
}

impl Counts {
    fn line(&self) -> String {
        format!(
            "reads={} refreshed={} refused={} torn={} damaged={} other={}",
            self.reads, self.refreshed, self.refused, self.torn, self.damaged, self.other
        )
    }

    fn parse(line: &str) -> Counts {
        let get = |k: &str| -> u64 {
            line.split_whitespace()
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {k} in {line:?}"))
        };
        Counts {
            reads: get("reads"),
            refreshed: get("refreshed"),
            refused: get("refused"),
            torn: get("torn"),
            damaged: get("damaged"),
            other: get("other"),
        }
    }
}

/// One role's loop, in a child process: `kind` is `w0`..`w3` (items,
/// appends, inserts and deletes past the fixed rows, the vlmetalayer) or
/// `r` (reader); committed writes are logged to `log`.
fn role(kind: &str, url: &str, checksums: bool, level: Durability, seconds: f64, log: &Path) -> Counts {
    let mut a = Array::open(&ctx(checksums), url).unwrap();
    a.set_durability(level);
    let mut log = std::fs::File::create(log).unwrap();
    let mut c = Counts::default();
    let deadline = Instant::now() + Duration::from_secs_f64(seconds);
    let writer = kind.strip_prefix('w').map(|w| w.parse::<u64>().unwrap());
    let mut seq = 0u64;
    let mut rng = std::process::id() as u64 | 1;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    while Instant::now() < deadline {
        seq += 1;
        let r = match writer {
            Some(w) => {
                let gen = ((w + 1) << 32) | seq;
                let r = match w {
                    0 => {
                        let (row, n) = ((next() % FIXED as u64) as i64, 1 + (next() % 4) as i64);
                        let n = n.min(FIXED - row);
                        a.set_slice_buffer(&[row, 0], &[row + n, COLS], &rows(gen, n), &[n, COLS])
                            .map(|()| format!("set {row} {n} {gen}"))
                    }
                    1 => a.append(&rows(gen, 1), 0).map(|()| format!("append {gen}")),
                    2 if seq % 2 == 1 => a.insert(&rows(0, 8), 0, FIXED).map(|()| "grow".to_string()),
                    2 => match a.delete(0, FIXED, 4) {
                        // Fewer than 4 rows past the fixed ones (as the array is now): nothing done.
                        Err(e) if e.kind() == ErrorKind::InvalidArgument => Ok(String::new()),
                        r => r.map(|()| "shrink".to_string()),
                    },
                    _ => a.vlmeta_update("stamp", gen.to_string().as_bytes()).map(|()| format!("stamp {gen}")),
                };
                r.map(|line| {
                    if !line.is_empty() {
                        writeln!(log, "{line}").unwrap();
                    }
                })
            }
            None => {
                let r = a.to_vec().and_then(|v| {
                    let stamp = a.vlmeta_get("stamp")?;
                    assert!(std::str::from_utf8(&stamp).is_ok_and(|s| s.parse::<u64>().is_ok()), "{stamp:?}");
                    Ok(v)
                });
                match r {
                    Ok(v) => {
                        c.reads += 1;
                        if let Err(row) = gens(&v) {
                            eprintln!("torn row {row}");
                            c.torn += 1;
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            }
        };
        match r {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Changed && writer.is_none() => {
                c.refused += 1;
                a.refresh().unwrap();
                c.refreshed += 1;
            }
            Err(e) if says_damaged(&e) => {
                eprintln!("{kind}: {e}");
                c.damaged += 1;
            }
            Err(e) => {
                eprintln!("{kind}: {e}");
                c.other += 1;
            }
        }
    }
    c
}

#[test]
fn soak_role() {
    let Ok(spec) = std::env::var(ROLE) else { return };
    let f: Vec<&str> = spec.split('|').collect();
    let c = role(f[0], f[1], f[2] == "1", f[3].parse().unwrap(), f[4].parse().unwrap(), Path::new(f[5]));
    println!("COUNTS {} {}", f[0], c.line());
}

#[test]
fn soak() {
    let seconds: f64 = std::env::var("CATERVA_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let exe = std::env::current_exe().unwrap();
    for contiguous in [true, false] {
        for checksums in [false, true] {
            // At `normal`, each writer's epoch is ended by the next writer's write.
            for level in [Durability::Process, Durability::Full, Durability::Normal] {
                let what = format!("contiguous {contiguous}, checksums {checksums}, {level}");
                let d = scratch(&format!("soak-{contiguous}-{checksums}-{level}"));
                let url = create(&d, contiguous, checksums);
                let kinds = ["w0", "w1", "w2", "w3", "r", "r", "r", "r"];
                let children: Vec<_> = kinds
                    .iter()
                    .enumerate()
                    .map(|(i, k)| {
                        let log = d.join(format!("log-{i}"));
                        let spec = format!("{k}|{url}|{}|{level}|{seconds}|{}", u8::from(checksums), log.display());
                        let child = Command::new(&exe)
                            .args(["--exact", "soak_role", "--nocapture", "--test-threads", "1"])
                            .env(ROLE, spec)
                            .stdout(Stdio::piped())
                            .spawn()
                            .unwrap();
                        (k, log, child)
                    })
                    .collect();
                let mut total = Counts::default();
                let mut logs = BTreeMap::new();
                for (k, log, child) in children {
                    let out = child.wait_with_output().unwrap();
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    let line = stdout.lines().find_map(|l| l.split_once("COUNTS ")).map(|(_, c)| c);
                    let line =
                        line.unwrap_or_else(|| panic!("{what}: role {k} printed no counts ({}): {stdout}", out.status));
                    let c = Counts::parse(line);
                    println!("{what}: {k} {}", c.line());
                    assert_eq!((c.torn, c.damaged, c.other), (0, 0, 0), "{what}: role {k}: {}", c.line());
                    total.reads += c.reads;
                    total.refreshed += c.refreshed;
                    total.refused += c.refused;
                    logs.entry(*k).or_insert_with(String::new).push_str(&std::fs::read_to_string(log).unwrap());
                }
                assert!(total.reads > 0, "{what}: no read finished");
                println!("{what}: readers {}", total.line());
                check_end_state(&url, checksums, &logs, &what);
                std::fs::remove_dir_all(&d).unwrap();
            }
        }
    }
}

/// The oracle: the shape the committed appends, grows and shrinks make;
/// the fixed rows as the item writer's last committed write of each left
/// them; every other row zeros or an appended row; the vlmetalayer the
/// last committed stamp.
fn check_end_state(url: &str, checksums: bool, logs: &BTreeMap<&str, String>, what: &str) {
    let a = Array::open(&ctx(checksums), url).unwrap();
    let log = |k: &str| logs.get(k).map_or(Vec::new(), |s| s.lines().map(str::to_owned).collect::<Vec<_>>());
    let (appends, resizes) = (log("w1"), log("w2"));
    let grows = resizes.iter().filter(|l| *l == "grow").count() as i64;
    let shrinks = resizes.iter().filter(|l| *l == "shrink").count() as i64;
    assert_eq!(a.shape()[0], FIXED + appends.len() as i64 + 8 * grows - 4 * shrinks, "{what}: rows");
    let got = gens(&a.to_vec().unwrap()).unwrap_or_else(|row| panic!("{what}: row {row} is torn at the end"));
    let mut fixed = vec![0u64; FIXED as usize];
    for l in log("w0") {
        let f: Vec<u64> = l.split_whitespace().skip(1).map(|x| x.parse().unwrap()).collect();
        for r in f[0]..f[0] + f[1] {
            fixed[r as usize] = f[2];
        }
    }
    assert_eq!(got[..FIXED as usize], fixed[..], "{what}: the fixed rows");
    let appended: std::collections::BTreeSet<u64> =
        appends.iter().map(|l| l.strip_prefix("append ").unwrap().parse().unwrap()).collect();
    for (i, g) in got.iter().enumerate().skip(FIXED as usize) {
        assert!(*g == 0 || appended.contains(g), "{what}: row {i} holds generation {g}, never appended");
    }
    let stamp = log("w3").last().map_or("0".to_string(), |l| l.strip_prefix("stamp ").unwrap().to_string());
    assert_eq!(a.vlmeta_get("stamp").unwrap(), stamp.as_bytes(), "{what}: the vlmetalayer");
}
