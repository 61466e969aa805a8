//! Links the Python extension module with quiche's clock and random bytes interposed
//! (`transport::quiche::LINK_ARGS`, explained in `transport/src/quiche/interpose.rs`), so
//! `stack = "quiche"` flows run in virtual time. Build scripts themselves are linked without
//! them.

fn main() {
    for symbol in ["clock_gettime", "gettimeofday", "time", "RAND_bytes"] {
        println!("cargo:rustc-link-arg-cdylib=-Wl,--wrap={symbol}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
