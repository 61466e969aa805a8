//! Virtual time and seeded randomness for quiche, by link-time interposition. The only unsafe
//! code of the quiche stack lives here.
//!
//! quiche takes no `now` argument: it reads `Instant::now()` and `SystemTime::now()` itself, and
//! BoringSSL draws its TLS randoms, key shares and session tickets from `RAND_bytes` (quiche's
//! random packet-number skips too, so even packet timing depends on it). A binary that runs
//! quiche flows is linked with
//!
//! ```text
//! -Wl,--wrap=clock_gettime -Wl,--wrap=gettimeofday -Wl,--wrap=time -Wl,--wrap=RAND_bytes
//! ```
//!
//! (the `build.rs` of each crate whose binaries or tests run quiche flows: `quiclab`, the
//! simulator's tests, the Python module), so every statically linked reference to these
//! symbols — Rust's standard library, quiche, BoringSSL — calls the `__wrap_*` functions below.
//! While a thread is inside [`Virtual::enter`], they answer from that thread's virtual time and
//! the flow's seeded generator; otherwise with the real clock and the kernel's randomness.
//!
//! The real-time fallbacks go to the kernel directly (`syscall(SYS_clock_gettime)`,
//! `getrandom`) rather than through `__real_*` symbols, so a binary linked *without* the wrap
//! options still links; [`check_interposed`] then refuses to run a quiche flow in it, instead of
//! letting quiche run on the wall clock.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The virtual monotonic clock's reading at virtual time zero, so that quiche can subtract its
/// timers and RTTs from early times without going below the clock's origin.
const MONOTONIC_BASE: Duration = Duration::from_secs(1_000_000);

thread_local! {
    /// Virtual monotonic time of this thread in ns (`None`: real time).
    static NOW_NS: Cell<Option<u64>> = const { Cell::new(None) };
    /// State of this thread's seeded generator (`None`: the kernel's randomness).
    static RNG: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The virtual-time state of one flow: its generator, carried between calls into quiche (flows
/// of one run interleave on one thread, each with its own stream of random bytes).
#[derive(Debug, Clone)]
pub(crate) struct Virtual {
    rng: u64,
}

impl Virtual {
    /// A flow's state, its random bytes a function of `seed`.
    pub(crate) fn new(seed: u64) -> Virtual {
        Virtual { rng: seed }
    }

    /// Runs `f` with this thread's clocks at virtual time `now` and `RAND_bytes` drawing from
    /// this flow's generator; restores the thread's previous state afterwards, also when `f`
    /// panics (the runner turns a run's panic into its error and the thread runs on).
    pub(crate) fn enter<R>(&mut self, now: Duration, f: impl FnOnce() -> R) -> R {
        /// Puts the thread's state back and keeps the flow's generator, on every exit.
        struct Restore<'a> {
            rng: &'a mut u64,
            now: Option<u64>,
            state: Option<u64>,
        }
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                if let Some(s) = RNG.replace(self.state) {
                    *self.rng = s;
                }
                NOW_NS.set(self.now);
            }
        }
        let ns = (MONOTONIC_BASE + now).as_nanos() as u64;
        let _restore = Restore {
            now: NOW_NS.replace(Some(ns)),
            state: RNG.replace(Some(self.rng)),
            rng: &mut self.rng,
        };
        f()
    }

    /// The `Instant` quiche sees at virtual time zero; virtual time of any `Instant` quiche
    /// returns is its distance from this.
    pub(crate) fn origin(&mut self) -> Instant {
        self.enter(Duration::ZERO, Instant::now)
    }
}

/// Whether this binary was linked with the wrap options: the clock and `RAND_bytes` answer from
/// virtual time and a seeded generator. Errors say what is missing.
pub(crate) fn check_interposed() -> Result<(), String> {
    static CHECKED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    CHECKED.get_or_init(probe_interposition).clone()
}

fn probe_interposition() -> Result<(), String> {
    let probe = Duration::from_nanos(123_456_789_987);
    let mut v = Virtual::new(42);
    let (clock_ok, rand_ok) = v.enter(probe, || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let want = MONOTONIC_BASE + probe;
        let clock_ok =
            ts.tv_sec as u64 == want.as_secs() && ts.tv_nsec as u32 == want.subsec_nanos();
        let mut got = [0u8; 16];
        let _ = boring::rand::rand_bytes(&mut got);
        (clock_ok, got)
    });
    let mut expected = [0u8; 16];
    fill_seeded(&mut 42, &mut expected);
    if clock_ok && rand_ok == expected {
        return Ok(());
    }
    Err(format!(
        "this program was linked without the link options that put quiche into virtual time ({}); \
         quiche flows need them, or quiche would run on the wall clock with unseeded randomness \
         (add the options to the crate's build.rs: see transport::quiche::LINK_ARGS)",
        crate::quiche::LINK_ARGS.join(" ")
    ))
}

/// splitmix64 over `state`: reproducible bytes for a closed simulation, not cryptography.
fn fill_seeded(state: &mut u64, out: &mut [u8]) {
    for chunk in out.chunks_mut(8) {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

/// This thread's virtual time in ns, if it is inside [`Virtual::enter`]. `try_with`: the
/// clock may be read while the thread's locals are being destroyed.
fn virtual_now() -> Option<u64> {
    NOW_NS.try_with(Cell::get).ok().flatten()
}

/// Wall-clock time at virtual zero (2027-01-01T00:00:00Z, as the quinn stack's virtual clock).
const WALL_EPOCH: Duration = Duration::from_secs(crate::clock::VIRTUAL_EPOCH_UNIX_SECS);

fn is_wall_clock(clk: libc::clockid_t) -> bool {
    matches!(
        clk,
        libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE | libc::CLOCK_TAI
    )
}

/// `clock_gettime` for every statically linked caller: virtual time inside
/// [`Virtual::enter`] (monotonic clocks from [`MONOTONIC_BASE`], wall clocks from 2027), else
/// the kernel's clock.
///
/// # Safety
/// `ts` must be valid for writes, as for `clock_gettime(2)`.
#[no_mangle]
pub unsafe extern "C" fn __wrap_clock_gettime(
    clk: libc::clockid_t,
    ts: *mut libc::timespec,
) -> libc::c_int {
    match virtual_now() {
        Some(ns) if !ts.is_null() => {
            let t = Duration::from_nanos(ns) - MONOTONIC_BASE;
            let t = if is_wall_clock(clk) {
                WALL_EPOCH + t
            } else {
                MONOTONIC_BASE + t
            };
            // SAFETY: the caller passes a writable timespec (checked non-null above).
            unsafe {
                (*ts).tv_sec = t.as_secs() as libc::time_t;
                (*ts).tv_nsec = t.subsec_nanos() as libc::c_long;
            }
            0
        }
        // SAFETY: the arguments are the caller's, passed on unchanged to the kernel.
        _ => unsafe { libc::syscall(libc::SYS_clock_gettime, clk, ts) as libc::c_int },
    }
}

/// `gettimeofday` for every statically linked caller: the virtual wall clock inside
/// [`Virtual::enter`], else the kernel's.
///
/// # Safety
/// `tv` must be null or valid for writes, as for `gettimeofday(2)`.
#[no_mangle]
pub unsafe extern "C" fn __wrap_gettimeofday(
    tv: *mut libc::timeval,
    tz: *mut libc::c_void,
) -> libc::c_int {
    match virtual_now() {
        Some(ns) => {
            let t = WALL_EPOCH + (Duration::from_nanos(ns) - MONOTONIC_BASE);
            if !tv.is_null() {
                // SAFETY: the caller passes a writable timeval (checked non-null).
                unsafe {
                    (*tv).tv_sec = t.as_secs() as libc::time_t;
                    (*tv).tv_usec = t.subsec_micros() as libc::suseconds_t;
                }
            }
            0
        }
        // SAFETY: the arguments are the caller's, passed on unchanged to the kernel.
        None => unsafe { libc::syscall(libc::SYS_gettimeofday, tv, tz) as libc::c_int },
    }
}

/// `time` for every statically linked caller: the virtual wall clock's seconds inside
/// [`Virtual::enter`], else the kernel's.
///
/// # Safety
/// `t` must be null or valid for writes, as for `time(2)`.
#[no_mangle]
pub unsafe extern "C" fn __wrap_time(t: *mut libc::time_t) -> libc::time_t {
    let secs = match virtual_now() {
        Some(ns) => (WALL_EPOCH + (Duration::from_nanos(ns) - MONOTONIC_BASE)).as_secs(),
        None => {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a valid, writable timespec.
            unsafe { libc::syscall(libc::SYS_clock_gettime, libc::CLOCK_REALTIME, &mut ts) };
            ts.tv_sec as u64
        }
    } as libc::time_t;
    if !t.is_null() {
        // SAFETY: the caller passes a writable time_t (checked non-null).
        unsafe { *t = secs };
    }
    secs
}

/// BoringSSL's `RAND_bytes` for every statically linked caller: the flow's seeded generator
/// inside [`Virtual::enter`] (reproducible, not secret: a closed simulation has no attacker),
/// else the kernel's `getrandom`. Returns 1 (success) as BoringSSL's does.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes, as for `RAND_bytes`.
#[no_mangle]
pub unsafe extern "C" fn __wrap_RAND_bytes(buf: *mut u8, len: libc::size_t) -> libc::c_int {
    if len == 0 || buf.is_null() {
        return 1;
    }
    // SAFETY: the caller hands `len` writable bytes at `buf` (non-null, checked above).
    let out = unsafe { std::slice::from_raw_parts_mut(buf, len) };
    if let Ok(Some(mut state)) = RNG.try_with(Cell::get) {
        fill_seeded(&mut state, out);
        RNG.set(Some(state));
        return 1;
    }
    let mut filled = 0;
    while filled < out.len() {
        let rest = &mut out[filled..];
        // SAFETY: `rest` is writable for its length.
        let n = unsafe { libc::getrandom(rest.as_mut_ptr().cast(), rest.len(), 0) };
        if n > 0 {
            filled += n as usize;
        } else if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return 0;
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entering_restores_the_previous_state_and_carries_the_generator() {
        let mut v = Virtual::new(7);
        let before = v.rng;
        v.enter(Duration::from_secs(1), || {
            assert!(virtual_now().is_some());
            let mut b = [0u8; 8];
            // SAFETY: `b` is 8 writable bytes.
            unsafe { __wrap_RAND_bytes(b.as_mut_ptr(), b.len()) };
        });
        assert_eq!(virtual_now(), None);
        assert_ne!(v.rng, before, "the flow keeps its generator's new state");
        let mut w = Virtual::new(7);
        let mut a = [0u8; 8];
        w.enter(Duration::ZERO, || unsafe {
            __wrap_RAND_bytes(a.as_mut_ptr(), 8)
        });
        assert_eq!(w.rng, v.rng, "the same seed draws the same bytes");
    }

    #[test]
    fn a_panic_inside_leaves_the_thread_in_real_time() {
        let mut v = Virtual::new(3);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            v.enter(Duration::from_secs(1), || panic!("inside quiche"))
        }));
        assert!(caught.is_err());
        assert_eq!(virtual_now(), None);
        assert_eq!(RNG.with(Cell::get), None);
    }

    #[test]
    fn the_wrappers_answer_in_virtual_time_when_entered() {
        let mut v = Virtual::new(1);
        let (mono, wall) = v.enter(Duration::from_millis(1500), || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let mut tw = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid timespecs.
            unsafe {
                __wrap_clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
                __wrap_clock_gettime(libc::CLOCK_REALTIME, &mut tw);
            }
            (ts, tw)
        });
        assert_eq!(mono.tv_sec as u64, MONOTONIC_BASE.as_secs() + 1);
        assert_eq!(mono.tv_nsec, 500_000_000);
        assert_eq!(wall.tv_sec as u64, WALL_EPOCH.as_secs() + 1);
        // Outside, the kernel's clock (the real wall clock is far from 2027 + 1.5 s).
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec.
        assert_eq!(
            unsafe { __wrap_clock_gettime(libc::CLOCK_REALTIME, &mut ts) },
            0
        );
        assert_ne!(ts.tv_sec as u64, WALL_EPOCH.as_secs() + 1);
    }

    #[test]
    fn without_the_link_options_a_quiche_flow_is_refused() {
        // This crate's unit tests are linked without the wrap options.
        let e = check_interposed().unwrap_err();
        assert!(e.contains("--wrap=clock_gettime"), "{e}");
    }
}
