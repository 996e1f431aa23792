//! Arrays on a web server (nginx) and an S3-compatible store (moto's
//! server), both started on 127.0.0.1 by the test: opened by URL through
//! the public API as a path would be, and by a C program through
//! `caterva_open`, read as on disk (every value checked against the local
//! copy), copied out, written, saved over, saved anew and removed on S3
//! (writes from Rust and C) and refused every change on the web server, and failing with clear errors on missing objects, objects
//! that are not arrays and servers that went away.
//!
//! One test function: the S3 client reads its endpoint and credentials from
//! the AWS environment variables, which are set once, before any client is
//! made (this file is its own process).

use std::path::Path;
use std::time::{Duration, Instant};

use caterva::testing::servers;
use caterva::{Array, Config, Context, ErrorKind, Metalayer, Params, StorageOptions, StorageParams};

mod common;
use common::{build_c_program, manifest_dir, run, scratch_dir};

/// `tests/remote/read_url.c` built against libcaterva.so: an existing C
/// program's `caterva_open`, given a URL.
fn c_reader(dir: &Path) -> std::path::PathBuf {
    let exe = dir.join("read_url");
    let source = manifest_dir().join("tests/remote/read_url.c");
    build_c_program(&[source], &exe, &[], "compiling tests/remote/read_url.c");
    exe
}

const SHAPE: [i64; 3] = [20, 33, 17];

fn items() -> Vec<u8> {
    (0..SHAPE.iter().product::<i64>()).flat_map(|v| (((v * 2_654_435_761) >> 9) as u32).to_le_bytes()).collect()
}

/// A local array of [`SHAPE`] u32 items at `url`.
fn make(ctx: &Context, url: &str, contiguous: bool) {
    let _ = Array::remove(url);
    let params = Params { itemsize: 4, shape: SHAPE.to_vec(), dtype: Some("<u4".into()) };
    let storage = StorageParams {
        chunkshape: vec![8, 16, 8],
        blockshape: vec![4, 4, 4],
        contiguous,
        urlpath: Some(url.to_owned()),
        metalayers: vec![Metalayer { name: "m".into(), content: b"meta".to_vec() }],
    };
    let mut a = Array::from_buffer(ctx, &params, &storage, &items()).unwrap();
    a.vlmeta_add("note", b"remote").unwrap();
}

/// The files of the array at `url`: (name under the array's key, bytes).
fn files(url: &str) -> Vec<(String, Vec<u8>)> {
    let p = Path::new(url);
    if p.is_file() {
        return vec![(String::new(), std::fs::read(p).unwrap())];
    }
    let mut out: Vec<_> = std::fs::read_dir(p)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (format!("/{}", e.file_name().to_str().unwrap()), std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// What a reader sees of an array: items, a slice across chunks, one item, metadata.
fn seen(a: &Array) -> [Vec<u8>; 5] {
    let mut part = vec![0; 4 * 9 * 20 * 9];
    a.get_slice_buffer(&[5, 10, 3], &[14, 30, 12], &mut part, &[9, 20, 9]).unwrap();
    let mut one = vec![0; 4];
    a.get_slice_buffer(&[19, 32, 16], &[20, 33, 17], &mut one, &[1, 1, 1]).unwrap();
    [a.to_vec().unwrap(), part, one, a.meta_get("m").unwrap(), a.vlmeta_get("note").unwrap()]
}

/// A sparse and a contiguous array written on S3 by 10 writes of random
/// boxes (zeros among them: the frame's `cbytes` shrinks), downloaded with
/// boto3 (any S3 client), open in python-blosc2 4.x with the values read
/// here: the layout stays Blosc2's (chunk objects numbered within what
/// c-blosc2 3.x accepts).
fn blosc2_reads_arrays_written_on_s3(ctx: &Context, dir: &Path, port: u16) {
    let (boto, blosc2) = (common::python("moto"), common::python("blosc2"));
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut rand = |n: i64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as i64
    };
    for contiguous in [false, true] {
        let name = if contiguous { "written.b2frame" } else { "written.b2nd" };
        let url = format!("s3://arrays/interop/{name}");
        let local = dir.join(format!("made-{name}"));
        make(ctx, &local.to_string_lossy(), contiguous);
        Array::open(ctx, &local.to_string_lossy()).unwrap().save(&url).unwrap();
        let mut a = Array::open(ctx, &url).unwrap();
        for w in 0..10 {
            let start: Vec<i64> = SHAPE.iter().map(|&n| rand(n)).collect();
            let stop: Vec<i64> = start.iter().zip(SHAPE).map(|(&s, n)| s + 1 + rand(n - s)).collect();
            let shape: Vec<i64> = start.iter().zip(&stop).map(|(a, b)| b - a).collect();
            let len = shape.iter().product::<i64>() as usize * 4;
            let fill = if w % 3 == 0 { 0 } else { 1 + w as u8 };
            a.set_slice_buffer(&start, &stop, &vec![fill; len], &shape).unwrap();
        }
        // A whole chunk of zeros too (stored as a special chunk: `cbytes` shrinks).
        a.set_slice_buffer(&[0, 0, 0], &[10, 10, 10], &vec![0; 10 * 10 * 10 * 4], &[10, 10, 10]).unwrap();
        let expected = dir.join(format!("{name}.expected"));
        std::fs::write(&expected, a.to_vec().unwrap()).unwrap();
        let got = dir.join(format!("downloaded-{name}"));
        let download = format!(
            "import boto3, os, sys\n\
             s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{port}', aws_access_key_id='test', \
             aws_secret_access_key='test', region_name='us-east-1')\n\
             key, out = 'interop/{name}', sys.argv[1]\n\
             objs = s3.list_objects_v2(Bucket='arrays', Prefix=key)['Contents']\n\
             for o in objs:\n    \
                 k = o['Key']\n    \
                 if k == key:\n        s3.download_file('arrays', k, out); continue\n    \
                 if not k.startswith(key + '/'): continue\n    \
                 os.makedirs(out, exist_ok=True)\n    \
                 s3.download_file('arrays', k, os.path.join(out, k[len(key) + 1:]))\n"
        );
        run(std::process::Command::new(&boto).arg("-c").arg(download).arg(&got), "downloading with boto3");
        let check = format!(
            "import blosc2, numpy as np, sys\n\
             a = blosc2.open(sys.argv[1])\n\
             want = np.fromfile(sys.argv[2], dtype='<u4').reshape({:?})\n\
             assert a.shape == want.shape, a.shape\n\
             assert (a[...] == want).all(), 'values differ'\n\
             print('python-blosc2', blosc2.__version__, 'reads', sys.argv[1], 'equal')\n",
            SHAPE
        );
        let out =
            run(std::process::Command::new(&blosc2).arg("-c").arg(check).arg(&got).arg(&expected), "python-blosc2");
        assert!(out.contains("equal"), "{out}");
    }
}

#[test]
fn arrays_on_web_servers_and_s3_read_as_on_disk() {
    let mut moto = servers::moto("arrays");
    servers::use_s3_endpoint(&moto.url());
    let mut nginx = servers::nginx();
    let dir = scratch_dir("remote");
    let reader = c_reader(&dir);
    let plain = Context::new(Config::default()).unwrap();
    let summed = Context::new(Config { checksums: true, ..Config::default() }).unwrap();
    let cached = Context::new(Config { block_cache: 1 << 20, ..Config::default() }).unwrap();
    for (i, ctx) in [&plain, &summed, &cached].into_iter().enumerate() {
        for contiguous in [true, false] {
            let name = format!("a{i}-{}.b2nd", if contiguous { "frame" } else { "dir" });
            let local = dir.join(&name).to_string_lossy().into_owned();
            make(ctx, &local, contiguous);
            let mine = Array::open(ctx, &local).unwrap();
            std::fs::create_dir_all(nginx.www().join("arrays").join(&name)).unwrap();
            for (rest, bytes) in files(&local) {
                let path = format!("arrays/{name}{rest}");
                if contiguous {
                    std::fs::remove_dir_all(nginx.www().join(&path)).unwrap();
                }
                std::fs::write(nginx.www().join(&path), &bytes).unwrap();
                assert_eq!(moto.request("PUT", &format!("/arrays/{path}"), &bytes), 200);
            }
            for url in [format!("{}/arrays/{name}", nginx.url()), format!("s3://arrays/arrays/{name}")] {
                let what = format!("{url} (context {i})");
                let mut remote = Array::open(ctx, &url).unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_eq!(remote.shape(), SHAPE, "{what}");
                assert_eq!(seen(&remote), seen(&mine), "{what}");
                assert_eq!(remote.has_checksums(), i == 1, "{what}");
                assert!(remote.verify(&mut |_, _| {}).unwrap().is_empty(), "{what}");
                // Copied out to a local path, read back whole.
                let back = dir.join(format!("back-{i}-{contiguous}")).to_string_lossy().into_owned();
                remote.save(&back).unwrap();
                assert_eq!(Array::open(ctx, &back).unwrap().to_vec().unwrap(), items(), "{what}");
                // From C, through the unchanged ABI.
                let out = dir.join("from-c.bin");
                run(std::process::Command::new(&reader).arg(&url).arg(&out), &format!("C reading {url}"));
                assert_eq!(std::fs::read(&out).unwrap(), items(), "{what}: read from C");
                // Writes: refused on a web server; on S3 published as new
                // objects and a conditional replacement, read back as the
                // same write on the local copy reads.
                let region = ([1, 2, 3], [5, 9, 7]);
                let part = vec![0xC3u8; 4 * 4 * 7 * 4];
                let write = |a: &mut Array| a.set_slice_buffer(&region.0, &region.1, &part, &[4, 7, 4]);
                if url.starts_with("s3://") {
                    write(&mut remote).unwrap_or_else(|e| panic!("{what}: {e}"));
                    let mut copy = Array::open(ctx, &back).unwrap();
                    write(&mut copy).unwrap();
                    assert_eq!(seen(&remote), seen(&copy), "{what}: after a write");
                    assert_eq!(seen(&Array::open(ctx, &url).unwrap()), seen(&copy), "{what}: written, reopened");
                    // Grown: appended to (many chunks at once on a local
                    // disk, through the frame's draft there) and resized.
                    let extra = vec![0x5Au8; (9 * SHAPE[1] * SHAPE[2] * 4) as usize];
                    let grown = [SHAPE[0] + 9 + 5, SHAPE[1] + 3, SHAPE[2]];
                    for a in [&mut remote, &mut copy] {
                        a.append(&extra, 0).unwrap_or_else(|e| panic!("{what}: appending: {e}"));
                        a.resize(&grown, None).unwrap_or_else(|e| panic!("{what}: resizing: {e}"));
                    }
                    let back_again = Array::open(ctx, &url).unwrap();
                    assert_eq!(back_again.shape(), grown, "{what}: grown");
                    assert_eq!(back_again.to_vec().unwrap(), copy.to_vec().unwrap(), "{what}: grown, reopened");
                } else {
                    let e = write(&mut remote).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{what}: {e}");
                    assert_eq!(seen(&Array::open(ctx, &url).unwrap()), seen(&mine), "{what}: after the refusal");
                }
                if url.starts_with("s3://") {
                    // Saved over (back as it was), saved anew, removed.
                    mine.save(&url).unwrap();
                    assert_eq!(seen(&Array::open(ctx, &url).unwrap()), seen(&mine), "{what}: saved over");
                    let other = format!("s3://arrays/saved/{name}");
                    mine.save(&other).unwrap();
                    assert_eq!(seen(&Array::open(ctx, &other).unwrap()), seen(&mine), "{what}: saved anew");
                    Array::remove(&other).unwrap();
                    assert!(Array::open(ctx, &other).is_err(), "{what}: removed");
                } else {
                    // Removing it, or saving over it, is refused: nothing written.
                    let before = seen(&Array::open(ctx, &url).unwrap());
                    assert_eq!(Array::remove(&url).unwrap_err().kind(), ErrorKind::InvalidStorage, "{what}");
                    assert_eq!(mine.save(&url).unwrap_err().kind(), ErrorKind::InvalidStorage, "{what}");
                    assert_eq!(seen(&Array::open(ctx, &url).unwrap()), before, "{what}: after the refusals");
                }
            }
        }
    }
    blosc2_reads_arrays_written_on_s3(&plain, &dir, moto.port);
    // Listed under their prefix, by layout.
    let listed = caterva::list("s3://arrays/interop/").unwrap();
    let names: Vec<_> = listed.iter().map(|l| (l.name.as_str(), l.contiguous)).collect();
    assert_eq!(names, [("written.b2frame", true), ("written.b2nd", false)]);
    assert_eq!(listed[1].url, "s3://arrays/interop/written.b2nd");
    assert_eq!(caterva::list("s3://arrays/interop").unwrap(), listed);
    assert_eq!(caterva::list(&format!("{}/arrays", nginx.url())).unwrap_err().kind(), ErrorKind::InvalidStorage);
    // Storage options for a prefix, over the environment: an endpoint
    // where nothing listens (no retries, a short limit) fails at once...
    let interop = "s3://arrays/interop/";
    let written = "s3://arrays/interop/written.b2nd";
    let nowhere = StorageOptions::parse("endpoint_url=http://127.0.0.1:9; retries=0; timeout=2").unwrap();
    caterva::set_storage_options(interop, nowhere).unwrap();
    let t = Instant::now();
    let e = Array::open(&plain, written).unwrap_err();
    assert!(e.to_string().contains("127.0.0.1:9"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    // ...and the server's endpoint, unsigned (anonymous: no credentials
    // needed, where the environment's are set aside), reads as before.
    // (The bucket made public by a policy, as a public dataset's is.)
    let policy = format!(
        "import boto3, json\n\
         s3 = boto3.client('s3', endpoint_url='{}', aws_access_key_id='test', aws_secret_access_key='test', \
         region_name='us-east-1')\n\
         s3.put_bucket_policy(Bucket='arrays', Policy=json.dumps({{'Version': '2012-10-17', 'Statement': [{{\
         'Effect': 'Allow', 'Principal': '*', 'Action': ['s3:GetObject', 's3:ListBucket'], \
         'Resource': ['arn:aws:s3:::arrays', 'arn:aws:s3:::arrays/*']}}]}}))\n",
        moto.url()
    );
    run(std::process::Command::new(common::python("moto")).arg("-c").arg(policy), "a public bucket policy");
    let anon = StorageOptions::new().set("endpoint_url", &moto.url()).unwrap().set("anon", "true").unwrap();
    caterva::set_storage_options(interop, anon).unwrap();
    let before = std::env::var("AWS_ACCESS_KEY_ID").unwrap();
    std::env::remove_var("AWS_ACCESS_KEY_ID");
    std::env::set_var("AWS_EC2_METADATA_DISABLED", "true");
    let e = Array::open(&plain, "s3://arrays/arrays/a0-frame.b2nd").unwrap_err();
    assert!(e.to_string().contains("no AWS credentials"), "{e}");
    assert_eq!(Array::open(&plain, written).unwrap().shape(), SHAPE);
    std::env::set_var("AWS_ACCESS_KEY_ID", before);
    caterva::set_storage_options(interop, StorageOptions::new()).unwrap();
    // Clear errors: nothing there, something that is not an array.
    for url in [format!("{}/arrays/none.b2nd", nginx.url()), "s3://arrays/arrays/none.b2nd".to_owned()] {
        let e = Array::open(&plain, &url).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{url}: {e}");
    }
    std::fs::write(nginx.www().join("arrays/text"), b"just some text, no frame here").unwrap();
    assert_eq!(moto.request("PUT", "/arrays/arrays/text", b"just some text, no frame here"), 200);
    for url in [format!("{}/arrays/text", nginx.url()), "s3://arrays/arrays/text".to_owned()] {
        let e = Array::open(&plain, &url).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidFormat, "{url}: {e}");
    }
    let e = Array::open(&plain, "s3://no-such-bucket/a.b2nd").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{e}");
    // Servers gone: an error after the retries, not a hang and not a crash.
    let http_url = format!("{}/arrays/a0-frame.b2nd", nginx.url());
    nginx.kill();
    moto.kill();
    for url in [http_url, "s3://arrays/arrays/a0-frame.b2nd".to_owned()] {
        let t = Instant::now();
        let e = Array::open(&plain, &url).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidStorage, "{url}: {e}");
        assert!(t.elapsed() < Duration::from_secs(90), "{url}: {:?}", t.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
