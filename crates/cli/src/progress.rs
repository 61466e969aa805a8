//! Progress of a sweep on stderr: a bar on a terminal, sparse plain lines in logs and pipes.
//!
//! Wall-clock time is used here only for display; it never reaches a result.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

/// Minimum gap between plain progress lines, so logs of long sweeps stay readable.
const LINE_PERIOD: Duration = Duration::from_secs(3);

/// Reports finished runs; shared by the worker threads.
pub struct Progress {
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

impl Progress {
    /// Progress over `total` runs, `already` of which were done before (resumed).
    pub fn new(total: usize, already: usize) -> Self {
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
        Progress {
            total,
            done: AtomicUsize::new(already),
            started: now,
            sink,
        }
    }

    /// Records one finished run (successful or not).
    pub fn finished(&self) {
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

    /// Prints a message without tearing the bar.
    pub fn message(&self, text: &str) {
        match &self.sink {
            Sink::Bar(bar) => bar.println(text),
            Sink::Lines(_) => eprintln!("{text}"),
        }
    }

    /// Removes the bar (plain lines need no cleanup).
    pub fn finish(&self) {
        if let Sink::Bar(bar) = &self.sink {
            bar.finish_and_clear();
        }
    }
}
