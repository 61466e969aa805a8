//! Links the studies' tests with quiche's clock and random bytes interposed
//! (`transport::quiche::LINK_ARGS`, explained in `transport/src/quiche/interpose.rs`): the
//! benchmark's quiche rows run in its unit tests, which `rustc-link-arg-tests` would not reach
//! (it covers integration tests only), so the options go to every target this crate links.
//! Build scripts are linked without them.

fn main() {
    for symbol in ["clock_gettime", "gettimeofday", "time", "RAND_bytes"] {
        println!("cargo:rustc-link-arg=-Wl,--wrap={symbol}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
