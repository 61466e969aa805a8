//! Links the `quiclab` binary (and its unit tests) with quiche's clock and random bytes
//! interposed (`transport::quiche::LINK_ARGS`, explained in
//! `transport/src/quiche/interpose.rs`), so `stack = "quiche"` flows run in virtual time.
//! Not the integration tests: they run the binary, and most link no `transport` (whose
//! `__wrap_*` functions the options would need). Build scripts are linked without them.

fn main() {
    for symbol in ["clock_gettime", "gettimeofday", "time", "RAND_bytes"] {
        println!("cargo:rustc-link-arg-bins=-Wl,--wrap={symbol}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
