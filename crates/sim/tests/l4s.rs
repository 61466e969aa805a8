//! The scalable controllers end to end in the simulator: DCTCP through a step-marking queue
//! keeps the queue short without losses at full utilisation; Prague beside CUBIC through
//! DualPI2 is an L4S path: Prague's ECT(1) packets take the L queue and see a fraction of the
//! classic queue's delay while both flows move data.

use std::path::Path;

use results::Run;
use scenario::model::RunSpec;

fn run(text: &str) -> Run {
    let loaded = scenario::parse_str(text, "l4s.toml", Path::new("."), &[], &[])
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let spec = RunSpec {
        id: "p0-r0".into(),
        point: 0,
        rep: 0,
        seed: 1,
    };
    let opts = sim::RunOptions {
        series: true,
        ..Default::default()
    };
    sim::run(&loaded.points[0], &spec, &opts).expect("run")
}

/// Mean smoothed RTT of flow `name` over the series rows after `from_s`, ms.
fn mean_srtt_ms(run: &Run, name: &str, from_s: f64) -> f64 {
    let rows: Vec<f64> = run
        .series
        .iter()
        .filter(|r| r.flow == name && r.t_s >= from_s && r.srtt_ms > 0.0)
        .map(|r| r.srtt_ms)
        .collect();
    assert!(!rows.is_empty(), "no series rows for {name}");
    rows.iter().sum::<f64>() / rows.len() as f64
}

/// One DCTCP (or other `cc`) bulk download over 50 Mbit/s, 20 ms, a 4-BDP buffer under a
/// CoDel queue that marks every ECT packet whose sojourn exceeds 1 ms (a step AQM).
fn step_marking(stack: &str, cc: &str) -> String {
    format!(
        "[run]\nduration = \"8s\"\nmeasure_from = \"2s\"\n\
         [link]\nrate = \"50Mbit\"\nrtt = \"20ms\"\nqueue = \"4bdp\"\n\
         qdisc = {{ model = \"codel\", ecn = true, ce_threshold = \"1ms\" }}\n\
         [[flow]]\nname = \"bulk\"\nstack = \"{stack}\"\ncc = \"{cc}\"\ndirection = \"down\"\n"
    )
}

#[test]
fn dctcp_keeps_a_step_marked_queue_short_without_losses() {
    for stack in ["tcp", "quic-model"] {
        let r = run(&step_marking(stack, "dctcp"));
        let link = &r.links["bottleneck_down"];
        let f = &r.flows[0];
        let lost = f.packets_lost.unwrap_or(0);
        let delay_ms = link.queue_delay_mean_s.expect("measured") * 1e3;
        let goodput = f.window_goodput_bps.expect("measured");
        eprintln!(
            "{stack} dctcp: queue delay mean {delay_ms:.2} ms max {:.2} ms, utilisation {:.3}, \
             goodput {:.2} Mbit/s, {} CE marks, {lost} lost, {:?}",
            link.queue_delay_max_s.unwrap_or(0.0) * 1e3,
            link.utilisation,
            goodput / 1e6,
            link.ce_marked_packets,
            f.ecn,
        );
        assert!(link.ce_marked_packets > 100, "{stack}: the step marks");
        assert!(
            lost <= 2,
            "{stack}: {lost} lost: DCTCP answers marks, not drops"
        );
        assert!(delay_ms < 3.0, "{stack}: mean queue delay {delay_ms} ms");
        // Over the whole run, slow start included.
        assert!(
            link.utilisation > 0.85,
            "{stack}: utilisation {}",
            link.utilisation
        );
        assert!(goodput > 0.85 * 50e6, "{stack}: goodput {goodput}");
        let ecn = f.ecn.as_ref().expect("ECN turned on by cc = dctcp");
        assert!(ecn.capable);
    }
}

#[test]
fn dctcp_reduces_less_than_classic_ecn_for_the_same_marks() {
    // Classic ECN halves on a mark, so through the same 1 ms step it cannot keep the link
    // busy; DCTCP's proportional reduction does.
    let classic = run(&format!("{}ecn = true\n", step_marking("tcp", "newreno")));
    let dctcp = run(&step_marking("tcp", "dctcp"));
    let u = |r: &Run| r.links["bottleneck_down"].utilisation;
    eprintln!(
        "utilisation: newreno+ECN {:.3}, dctcp {:.3}",
        u(&classic),
        u(&dctcp)
    );
    assert!(u(&dctcp) > u(&classic) + 0.05);
}

/// Prague and CUBIC (`stack`) downloading together through DualPI2 at 40 Mbit/s, 20 ms.
fn l4s_path(stack: &str) -> String {
    format!(
        "[run]\nduration = \"20s\"\nmeasure_from = \"5s\"\n\
         [link]\nrate = \"40Mbit\"\nrtt = \"20ms\"\nqueue = \"8bdp\"\nqdisc = \"dualpi2\"\n\
         [[flow]]\nname = \"prague\"\nstack = \"{stack}\"\ncc = \"prague\"\ndirection = \"down\"\n\
         [[flow]]\nname = \"cubic\"\nstack = \"{stack}\"\ncc = \"cubic\"\ndirection = \"down\"\necn = true\n"
    )
}

#[test]
fn prague_and_cubic_share_a_dualpi2_path_with_low_delay_for_prague() {
    for stack in ["tcp", "quic-model"] {
        let r = run(&l4s_path(stack));
        let link = &r.links["bottleneck_down"];
        let (p, c) = (&r.flows[0], &r.flows[1]);
        let gp = p.window_goodput_bps.expect("measured");
        let gc = c.window_goodput_bps.expect("measured");
        let (rp, rc) = (
            mean_srtt_ms(&r, "prague", 5.0),
            mean_srtt_ms(&r, "cubic", 5.0),
        );
        eprintln!(
            "{stack}: prague {:.2} Mbit/s srtt {rp:.2} ms lost {:?}; cubic {:.2} Mbit/s srtt \
             {rc:.2} ms lost {:?}; utilisation {:.3}, {} CE marks, {} AQM drops; prague {:?}",
            gp / 1e6,
            p.packets_lost,
            gc / 1e6,
            c.packets_lost,
            link.utilisation,
            link.ce_marked_packets,
            link.aqm_dropped_packets,
            p.ecn,
        );
        assert!(gp > 4e6 && gc > 4e6, "{stack}: both flows move data");
        assert!(
            link.utilisation > 0.85,
            "{stack}: utilisation {}",
            link.utilisation
        );
        // The base RTT is 20 ms; DualPI2 holds the classic queue near its 15 ms target and the
        // L queue near its 1 ms step.
        assert!(
            rp - 20.0 < 0.4 * (rc - 20.0),
            "{stack}: prague {rp} ms vs cubic {rc} ms"
        );
        assert!(rp < 26.0, "{stack}: prague's RTT {rp} ms");
        assert!(p.ecn.as_ref().is_some_and(|e| e.capable));
    }
}
