//! The bottleneck in the time series: its capacity per bin (the rate profile averaged over the
//! bin) and the queue delay of the packets that left its queue in the bin; and Mahimahi traces
//! carrying their average rate through the simulated link.

use std::path::Path;

use results::{Run, SeriesRow};
use scenario::model::RunSpec;

fn run_in(dir: &Path, text: &str, seed: u64, series: bool) -> Run {
    let loaded = scenario::parse_str(text, "t.toml", dir, &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed,
    };
    let opts = sim::RunOptions {
        series,
        ..Default::default()
    };
    sim::run(&loaded.points[0], &spec, &opts).expect("run")
}

fn run_toml(text: &str) -> Run {
    run_in(Path::new("."), text, 1, true)
}

/// The rows of the first flow (the link columns repeat on every flow's row).
fn rows(r: &Run) -> Vec<&SeriesRow> {
    let first = &r.flows[0].name;
    r.series.iter().filter(|x| &x.flow == first).collect()
}

const BULK: &str = "[[flow]]\nname = \"bulk\"\nstack = \"tcp\"\ndirection = \"down\"\n";

#[test]
fn a_constant_rate_links_capacity_is_its_rate_and_unlimited_has_none() {
    let r = run_toml(&format!(
        "[run]\nduration = \"3s\"\nsample_interval = \"250ms\"\n\
         [link.up]\nrate = \"3Mbit\"\n[link.down]\nrate = \"10Mbit\"\n{BULK}"
    ));
    let bins = rows(&r);
    assert_eq!(bins.len(), 12);
    for x in &bins {
        assert_eq!(
            (x.capacity_up_bps, x.capacity_down_bps),
            (Some(3e6), Some(10e6))
        );
    }
    let r = run_toml(&format!(
        "[run]\nduration = \"1s\"\n[link]\nrate = \"unlimited\"\n{BULK}"
    ));
    assert!(rows(&r)
        .iter()
        .all(|x| x.capacity_up_bps.is_none() && x.capacity_down_bps.is_none()));
    // Not measured is an empty field in the CSV, never 0.
    let csv = r.series_csv();
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).expect(name);
    for line in csv.lines().skip(1) {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len());
        assert_eq!(cells[at("capacity_down_bps")], "", "{line}");
    }
}

#[test]
fn a_rate_schedules_capacity_follows_its_steps_averaged_per_bin() {
    // Bins of 500 ms; the step at 1.25 s falls inside the bin (1 s, 1.5 s].
    let r = run_toml(&format!(
        "[run]\nduration = \"4s\"\nsample_interval = \"500ms\"\n[link]\nrate_schedule = [\
         {{ at = \"0s\", rate = \"2Mbit\" }}, {{ at = \"1250ms\", rate = \"8Mbit\" }}, \
         {{ at = \"2500ms\", rate = \"0bit\" }}, {{ at = \"3s\", rate = \"4Mbit\" }}]\n{BULK}"
    ));
    let got: Vec<(f64, Option<f64>)> = rows(&r)
        .iter()
        .map(|x| (x.t_s, x.capacity_down_bps))
        .collect();
    let want = [2e6, 2e6, 5e6, 8e6, 8e6, 0.0, 4e6, 4e6];
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (i, ((t, c), w)) in got.iter().zip(want).enumerate() {
        assert_eq!(*t, 0.5 * (i + 1) as f64);
        assert_eq!(*c, Some(w), "bin ending {t} s");
    }
    // Both directions follow the schedule set in [link].
    assert!(rows(&r)
        .iter()
        .all(|x| x.capacity_up_bps == x.capacity_down_bps));
}

#[test]
fn queue_delay_of_a_bufferbloated_drop_tail_path_grows_within_its_bound() {
    // 10 Mbit/s, 40 ms RTT, a drop-tail buffer of 8 BDP (400 kB: 320 ms at the rate); a
    // CUBIC download from 1 s fills it.
    let text = format!(
        "[run]\nduration = \"12s\"\nsample_interval = \"200ms\"\n\
         [link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\nqueue = \"400kB\"\n\
         {BULK}cc = \"cubic\"\nstart = \"1s\"\n"
    );
    let r = run_toml(&text);
    let bins = rows(&r);
    let down: Vec<(f64, Option<f64>, Option<f64>)> = bins
        .iter()
        .map(|x| (x.t_s, x.queue_delay_down_mean_ms, x.queue_delay_down_max_ms))
        .collect();
    // Before the flow starts no packet leaves the queue: no value, not zero.
    for &(t, mean, max) in down.iter().filter(|d| d.0 <= 1.0) {
        assert_eq!((mean, max), (None, None), "bin ending {t} s");
    }
    let active: Vec<(f64, f64, f64)> = down
        .iter()
        .filter_map(|&(t, mean, max)| Some((t, mean?, max?)))
        .collect();
    assert!(active.len() >= 50, "{down:?}");
    // The queue builds up: the first bins of the flow wait little, later ones hundreds of ms.
    assert!(active[0].1 < 10.0, "{active:?}");
    let peak = active.iter().map(|a| a.2).fold(0.0, f64::max);
    assert!(peak > 250.0, "{active:?}");
    // No packet waits longer than the buffer takes to drain (plus the packet in service).
    let bound_ms = (400_000.0 + 1500.0) * 8.0 / 10e6 * 1e3;
    for &(t, mean, max) in &active {
        assert!(
            0.0 <= mean && mean <= max && max <= bound_ms,
            "{t}: {mean} {max}"
        );
    }
    // The bins' largest delay is the run's (every packet that left was delivered but those
    // still in flight at the end).
    let run_max = r.links["bottleneck_down"]
        .queue_delay_max_s
        .expect("measured")
        * 1e3;
    assert!((peak - run_max).abs() < 1e-9, "{peak} vs {run_max}");
    // The ACK direction barely queues.
    let up_max = bins
        .iter()
        .filter_map(|x| x.queue_delay_up_max_ms)
        .fold(0.0, f64::max);
    assert!(up_max < 5.0, "{up_max}");
}

#[test]
fn the_link_columns_are_deterministic_and_change_no_other_result() {
    let text = format!(
        "[run]\nduration = \"5s\"\n[link]\nrate = \"10Mbit\"\nrtt = \"40ms\"\nqueue = \"4bdp\"\n\
         qdisc = \"pie\"\n{BULK}cc = \"cubic\"\n\
         [[cross]]\npattern = \"onoff\"\nrate = \"4Mbit\"\non = \"300ms\"\noff = \"700ms\"\n"
    );
    let dir = Path::new(".");
    let a = run_in(dir, &text, 7, true);
    let b = run_in(dir, &text, 7, true);
    assert_eq!(a.series_csv(), b.series_csv());
    assert!(a
        .series
        .iter()
        .any(|x| x.queue_delay_down_max_ms > Some(5.0)));
    // Taking the per-bin windows advances the links as polling does: the run's results are
    // the same with and without series.
    let without = run_in(dir, &text, 7, false);
    assert!(without.series.is_empty());
    assert_eq!(
        serde_json::to_string(&a).expect("json"),
        serde_json::to_string(&without).expect("json")
    );
}

/// Writes `trace` as `name` in `dir` and returns a scenario whose downlink runs it, saturated by
/// a 30 Mbit/s CBR source of 1500-byte IP packets beside a bulk flow, for `secs` seconds.
fn saturated_trace(dir: &Path, name: &str, trace: &[u64], secs: u64) -> Run {
    let text: String = trace.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(dir.join(name), text).expect("write trace");
    run_in(
        dir,
        &format!(
            "[run]\nduration = \"{secs}s\"\nsample_interval = \"1s\"\n\
             [link]\nrate = \"10Mbit\"\ndelay = \"5ms\"\nqueue = \"100pkt\"\n\
             [link.down]\nmahimahi_trace = \"{name}\"\n{BULK}\
             [[cross]]\npattern = \"cbr\"\nrate = \"30Mbit\"\nsize = \"1472B\"\n"
        ),
        1,
        true,
    )
}

#[test]
fn generated_mahimahi_traces_deliver_their_average_rate() {
    let tmp = fsutil::PrivateDir::new("sim-test-mahimahi-").expect("temp dir");
    // A constant 12 Mbit/s trace (one opportunity every ms for 2 s) and an on/off one (two
    // per ms for 60 ms, none for 40 ms, every 100 ms, plus the last line: 121 per 100 ms).
    let constant: Vec<u64> = (1..=2000).collect();
    let mut on_off: Vec<u64> = (0..60).flat_map(|m| [m, m]).collect();
    on_off.push(100);
    for (name, trace, rate) in [
        ("constant.down", constant, 12e6),
        ("on-off.down", on_off, 121.0 * 12_000.0 / 0.1),
    ] {
        let r = saturated_trace(tmp.path(), name, &trace, 10);
        let link = &r.links["bottleneck_down"];
        // 10 s is a whole number of periods: the link delivers the trace's average rate.
        let delivered = link.forwarded_bytes as f64 * 8.0 / 10.0;
        assert!(
            (delivered / rate - 1.0).abs() < 0.01,
            "{name}: {delivered} bit/s delivered, {rate} in the trace"
        );
        assert!(link.dropped_queue_packets > 0, "{name}: not saturated");
        // The capacity column is the trace's average in every 1 s bin (whole periods).
        for x in rows(&r) {
            let c = x.capacity_down_bps.expect("a traced link has a capacity");
            assert!((c / rate - 1.0).abs() < 1e-12, "{name}: {c} at {}", x.t_s);
            assert_eq!(x.capacity_up_bps, Some(10e6));
        }
    }
}
