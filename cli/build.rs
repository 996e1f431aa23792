//! Build script: the `caterva` binary finds the libblosc2.so that the
//! library's build script copies beside it (target/<profile>/), wherever
//! both are installed.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
}
