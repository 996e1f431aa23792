//! Reads of arrays on disk fetch their chunks themselves (store/reader.rs):
//! only the blocks a read needs, without the super-chunk's lock. Every read
//! kind (whole array, planes along each axis, boxes, single items,
//! orthogonal selections, from several threads at once) must return what
//! the same array in memory returns, on contiguous and sparse frames, with
//! codecs and filters that lay blocks out differently (split streams,
//! memcpyed chunks, zero chunks, blocks compressed out of order by several
//! threads); and a plane along the first axis must read less than the
//! chunks it touches.

use caterva::{Array, CParams, Codec, Config, Context, Filter, Params, StorageParams};

/// An empty slot of the filter pipeline.
const N: Filter = Filter::NoFilter;

/// The tests here take turns: two of them count the bytes read from files
/// by the whole process.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn ctx(cparams: CParams, nthreads: usize) -> Context {
    Context::new(Config { nthreads, cparams, checksums: false, ..Config::default() }).unwrap()
}

fn items(n: usize) -> Vec<u8> {
    (0..n as u64).flat_map(|i| ((i / 3) ^ (i % 7 * 1000)).to_le_bytes()).collect()
}

const SHAPE: [i64; 3] = [37, 41, 29];

fn storage(url: Option<String>, contiguous: bool) -> StorageParams {
    StorageParams {
        chunkshape: vec![12, 20, 16],
        blockshape: vec![5, 6, 7],
        contiguous,
        urlpath: url,
        ..StorageParams::default()
    }
}

fn region(a: &Array, start: &[i64], stop: &[i64]) -> Vec<u8> {
    let shape: Vec<i64> = start.iter().zip(stop).map(|(s, e)| e - s).collect();
    let mut out = vec![0u8; shape.iter().product::<i64>() as usize * 8];
    a.get_slice_buffer(start, stop, &mut out, &shape).unwrap();
    out
}

fn same_reads(mem: &Array, disk: &Array, what: &str) {
    assert!(mem.to_vec().unwrap() == disk.to_vec().unwrap(), "{what}: whole array");
    for axis in 0..3 {
        for k in [0, SHAPE[axis] / 2, SHAPE[axis] - 1] {
            let mut start = vec![0, 0, 0];
            let mut stop = SHAPE.to_vec();
            start[axis] = k;
            stop[axis] = k + 1;
            assert!(region(mem, &start, &stop) == region(disk, &start, &stop), "{what}: plane {k} along {axis}");
        }
    }
    let mut x: u64 = 7;
    for _ in 0..40 {
        let mut start = [0i64; 3];
        let mut stop = [0i64; 3];
        for d in 0..3 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let len = 1 + (x >> 33) as i64 % 9;
            let s = (x >> 45) as i64 % (SHAPE[d] - len + 1);
            start[d] = s;
            stop[d] = s + len;
        }
        assert!(region(mem, &start, &stop) == region(disk, &start, &stop), "{what}: box {start:?}..{stop:?}");
    }
    let sel: [&[i64]; 3] = [&[0, 5, 36], &[40, 1, 20], &[3, 28]];
    let (mut a, mut b) = (vec![0u8; 18 * 8], vec![0u8; 18 * 8]);
    mem.get_orthogonal_selection(&sel, &mut a, &[3, 3, 2]).unwrap();
    disk.get_orthogonal_selection(&sel, &mut b, &[3, 3, 2]).unwrap();
    assert!(a == b, "{what}: orthogonal selection");
    // Several threads at once on one handle.
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                let k = (t * 9) % SHAPE[0];
                let (start, stop) = ([k, 0, 0], [k + 1, SHAPE[1], SHAPE[2]]);
                assert!(region(mem, &start, &stop) == region(disk, &start, &stop), "{what}: threaded plane {k}");
            });
        }
    });
}

#[test]
fn reads_from_files_equal_reads_from_memory() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("caterva-file-reads-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = SHAPE.iter().product::<i64>() as usize;
    let data = items(n);
    let p = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let codecs = [
        (
            "zstd shuffle",
            CParams { codec: Codec::Zstd, clevel: 5, filters: [N, N, N, N, N, Filter::Shuffle], ..CParams::default() },
        ),
        (
            "lz4 bitshuffle",
            CParams {
                codec: Codec::Lz4,
                clevel: 9,
                filters: [N, N, N, N, N, Filter::BitShuffle],
                ..CParams::default()
            },
        ),
        ("blosclz no filter", CParams { codec: Codec::BloscLz, clevel: 1, filters: [N; 6], ..CParams::default() }),
        ("memcpy", CParams { codec: Codec::BloscLz, clevel: 0, filters: [N; 6], ..CParams::default() }),
    ];
    for (name, cp) in codecs {
        for nthreads in [1, 3] {
            let c = ctx(cp, nthreads);
            let mem = Array::from_buffer(&c, &p, &storage(None, true), &data).unwrap();
            for contiguous in [true, false] {
                let url = dir.join(format!(
                    "{}-{nthreads}.{}",
                    name.replace(' ', "_"),
                    if contiguous { "b2frame" } else { "b2nd" }
                ));
                let url = url.to_string_lossy().into_owned();
                let mut disk = Array::from_buffer(&c, &p, &storage(Some(url.clone()), contiguous), &data).unwrap();
                // Zero chunks among the others.
                let zeros = vec![0u8; 12 * 20 * 16 * 8];
                disk.set_slice_buffer(&[12, 20, 0], &[24, 40, 16], &zeros, &[12, 20, 16]).unwrap();
                let mut mem = mem.copy(&c, &storage(None, true)).unwrap();
                mem.set_slice_buffer(&[12, 20, 0], &[24, 40, 16], &zeros, &[12, 20, 16]).unwrap();
                let what = format!("{name}, {nthreads} threads, contiguous {contiguous}");
                same_reads(&mem, &disk, &what);
                let reopened = Array::open(&c, &url).unwrap();
                same_reads(&mem, &reopened, &format!("{what}, reopened"));
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_plane_reads_only_the_blocks_it_needs() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("caterva-file-bytes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = SHAPE.iter().product::<i64>() as usize;
    let p = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let cp = CParams { codec: Codec::Zstd, clevel: 5, filters: [N, N, N, N, N, Filter::Shuffle], ..CParams::default() };
    let c = ctx(cp, 1);
    // Incompressible items, so that the blocks hold most of the bytes.
    let mut x: u64 = 1;
    let data: Vec<u8> = (0..n * 8)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for contiguous in [true, false] {
        let url = dir.join(if contiguous { "a.b2frame" } else { "a.b2nd" }).to_string_lossy().into_owned();
        let arr = Array::from_buffer(&c, &p, &storage(Some(url), contiguous), &data).unwrap();
        let cbytes = arr.info().cbytes;
        let before = caterva::testing::bytes_read_from_files();
        let plane = region(&arr, &[0, 0, 0], &[1, SHAPE[1], SHAPE[2]]);
        let read = caterva::testing::bytes_read_from_files() - before;
        // The plane touches the first row of chunks (a third of the array),
        // and one block in three along the first axis of each.
        assert!(read > 0 && (read as i64) < cbytes / 6, "read {read} bytes of {cbytes} for a plane");
        let whole = arr.to_vec().unwrap();
        let row = (SHAPE[1] * SHAPE[2] * 8) as usize;
        assert!(plane == whole[..row]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_block_cache_serves_repeated_reads_and_forgets_on_write() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("caterva-block-cache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let n = SHAPE.iter().product::<i64>() as usize;
    let data = items(n);
    let p = Params { itemsize: 8, shape: SHAPE.to_vec(), dtype: None };
    let cp = CParams::default();
    let cached = Context::new(Config { nthreads: 2, cparams: cp, block_cache: 64 << 20, ..Config::default() }).unwrap();
    let plain = ctx(cp, 2);
    for contiguous in [true, false] {
        let url = dir.join(if contiguous { "c.b2frame" } else { "c.b2nd" }).to_string_lossy().into_owned();
        Array::from_buffer(&plain, &p, &storage(Some(url.clone()), contiguous), &data).unwrap();
        let mut arr = Array::open(&cached, &url).unwrap();
        let mem = Array::from_buffer(&plain, &p, &storage(None, true), &data).unwrap();
        // Windows panning over a plane, twice: the second pass reads no file.
        let windows: Vec<([i64; 3], [i64; 3])> =
            (0..6).map(|i| ([5, 3 * i, 2 * i], [6, 3 * i + 20, 2 * i + 15])).collect();
        for (s, e) in &windows {
            assert!(region(&arr, s, e) == region(&mem, s, e));
        }
        let before = caterva::testing::bytes_read_from_files();
        for (s, e) in &windows {
            assert!(region(&arr, s, e) == region(&mem, s, e), "cached window {s:?}");
        }
        assert_eq!(caterva::testing::bytes_read_from_files(), before, "a cached pass read the file");
        // A write through the handle empties the cache: reads see it.
        let ones = vec![1u8; 20 * 15 * 8];
        arr.set_slice_buffer(&[5, 0, 0], &[6, 20, 15], &ones, &[1, 20, 15]).unwrap();
        let mut mem = mem;
        mem.set_slice_buffer(&[5, 0, 0], &[6, 20, 15], &ones, &[1, 20, 15]).unwrap();
        for (s, e) in &windows {
            assert!(region(&arr, s, e) == region(&mem, s, e), "window {s:?} after a write");
        }
        assert!(arr.to_vec().unwrap() == mem.to_vec().unwrap());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
