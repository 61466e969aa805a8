//! Progress of a sweep on stderr: a bar on a terminal, sparse plain lines in logs and pipes.
//!
//! The experiment library reports through its `Progress` trait; this is the terminal rendering.
//! Wall-clock time is used here only for display; it never reaches a result.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Minimum gap between plain progress lines, so logs of long sweeps stay readable.
const LINE_PERIOD: Duration = Duration::from_secs(3);

/// Reports a sweep's runs on stderr; created empty, set up when the sweep begins.
#[derive(Default)]
pub struct Progress {
    state: OnceLock<State>,
}

struct State {
    total: usize,
    done: AtomicUsize,
    started: Instant,
    sink: Sink,
}

enum Sink {
    Bar(ProgressBar),
    /// Time of the last printed line.
    Lines(Mutex<Instant>),
}

impl State {
    /// Progress over `total` runs, `already` of which were done before (resumed).
    fn new(total: usize, already: usize) -> Self {
        let now = Instant::now();
        let sink = if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(
                "{bar:40} {pos}/{len} runs  {elapsed_precise} elapsed, ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_position(already as u64);
            // Resumed runs took no time now; counting them would make the ETA far too optimistic.
            bar.reset_eta();
            Sink::Bar(bar)
        } else {
            // Backdate so the first finished run is reported at once.
            Sink::Lines(Mutex::new(now.checked_sub(LINE_PERIOD).unwrap_or(now)))
        };
        State {
            total,
            done: AtomicUsize::new(already),
            started: now,
            sink,
        }
    }

    /// Prints a message without tearing the bar.
    fn message(&self, text: &str) {
        match &self.sink {
            Sink::Bar(bar) => bar.println(text),
            Sink::Lines(_) => eprintln!("{text}"),
        }
    }

    fn finished(&self) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        match &self.sink {
            Sink::Bar(bar) => bar.inc(1),
            Sink::Lines(last) => {
                let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
                if done == self.total || last.elapsed() >= LINE_PERIOD {
                    *last = Instant::now();
                    eprintln!(
                        "{done}/{} runs done ({:.0} s elapsed)",
                        self.total,
                        self.started.elapsed().as_secs_f64()
                    );
                }
            }
        }
    }
}

impl experiment::Progress for Progress {
    fn begin(&self, total: usize, done: usize) {
        if done > 0 {
            eprintln!("resuming: {done} of {total} runs already done");
        }
        let _ = self.state.set(State::new(total, done));
    }

    fn finished(&self, id: &str, error: Option<&str>) {
        let Some(state) = self.state.get() else {
            return;
        };
        if let Some(e) = error {
            state.message(&format!("run {id} failed: {e}"));
        }
        state.finished();
    }

    fn end(&self) {
        // Plain lines need no cleanup; the bar is removed.
        if let Some(State {
            sink: Sink::Bar(bar),
            ..
        }) = self.state.get()
        {
            bar.finish_and_clear();
        }
    }
}

/// `quiclab validate`'s counter: `\r`-rewritten on a terminal, every 20 runs in logs.
pub struct Counter {
    label: &'static str,
    tty: bool,
    total: AtomicUsize,
    done: AtomicUsize,
}

impl Counter {
    /// A counter printing `<label>: done/total runs`.
    pub fn new(label: &'static str) -> Self {
        Counter {
            label,
            tty: std::io::stderr().is_terminal(),
            total: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
        }
    }
}

impl experiment::Progress for Counter {
    fn begin(&self, total: usize, done: usize) {
        self.total.store(total, Ordering::SeqCst);
        self.done.store(done, Ordering::SeqCst);
    }

    fn finished(&self, _id: &str, _error: Option<&str>) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        let total = self.total.load(Ordering::SeqCst);
        if self.tty {
            eprint!("\r{}: {done}/{total} runs", self.label);
        } else if done == total || done.is_multiple_of(20) {
            eprintln!("{}: {done}/{total} runs", self.label);
        }
    }

    fn end(&self) {
        if self.tty {
            eprintln!();
        }
    }
}
