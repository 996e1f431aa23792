//! The fuzz binaries find libblosc2.so beside them, where caterva's build
//! script copies it.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-rpath,$ORIGIN");
}
