//! Clocks and scheduling for the real-time forwarder.
//!
//! The link model runs on a monotonic time base starting at the forwarder's start. Kernel
//! receive timestamps are wall-clock (CLOCK_REALTIME); they are converted with an offset
//! measured at start, which removes the forwarder's own wake-up lag from the delay.

use std::time::Duration;

fn now_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    now_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds since the Unix epoch.
pub fn realtime_ns() -> u64 {
    now_ns(libc::CLOCK_REALTIME)
}

/// The forwarder's time base.
#[derive(Debug, Clone, Copy)]
pub struct LinkClock {
    start_mono: u64,
    /// realtime − monotonic, measured once.
    offset: i128,
}

impl LinkClock {
    /// A time base starting now.
    pub fn start() -> Self {
        let mono = monotonic_ns();
        let real = realtime_ns();
        LinkClock {
            start_mono: mono,
            offset: i128::from(real) - i128::from(mono),
        }
    }

    /// Time since start.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(monotonic_ns().saturating_sub(self.start_mono))
    }

    /// Link time of a kernel wall-clock timestamp, clamped to `[0, now]` (a clock step must not
    /// schedule packets in the future or before the start).
    pub fn link_time_of(&self, realtime_ns: u64, now: Duration) -> Duration {
        let mono = i128::from(realtime_ns) - self.offset - i128::from(self.start_mono);
        let t = Duration::from_nanos(mono.clamp(0, now.as_nanos() as i128) as u64);
        // A timestamp more than a second old is a clock step, not a queueing delay.
        if now.saturating_sub(t) > Duration::from_secs(1) {
            now
        } else {
            t
        }
    }

    /// Wall-clock nanoseconds of a link time (pcap timestamps).
    pub fn realtime_of(&self, t: Duration) -> u64 {
        (i128::from(self.start_mono) + t.as_nanos() as i128 + self.offset).max(0) as u64
    }
}

/// Sets the calling thread's timer slack to 1 ns (the 50 µs default delays every wake-up).
pub fn set_min_timer_slack() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Pins the calling thread to `cpu`; returns whether it worked.
pub fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Moves the calling thread to SCHED_FIFO at a low real-time priority; returns whether it
/// worked. Only for threads that sleep between packets: a spinning FIFO thread gets throttled.
pub fn set_realtime_priority() -> bool {
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: valid policy and parameter; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Number of CPUs this process may run on.
pub fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
