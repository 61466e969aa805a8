//! A program linked without `transport::quiche::LINK_ARGS` (this test binary: the transport
//! crate has no build script adding them) refuses to build a quiche flow, rather than letting
//! quiche run on the wall clock with unseeded randomness.

use std::time::Duration;

use transport::cc_adapter::CcChoice;
use transport::clock::VirtualClock;
use transport::flow::FlowPlan;
use transport::quiche::{QuicheFlow, QuicheFlowConfig, QuicheFlowError, QuicheKnobs, LINK_ARGS};
use transport::workload::Workload;

#[test]
fn a_quiche_flow_is_refused_without_the_link_options() {
    let cfg = QuicheFlowConfig {
        plan: FlowPlan {
            name: "dl".into(),
            workload: Workload::Download {
                size: 1000,
                streams: 1,
                connections: 1,
            },
            start: Duration::ZERO,
            stop: None,
            cc: CcChoice::default(),
        },
        knobs: QuicheKnobs::default(),
        seed: 1,
        client_addr: "10.0.0.1:4433".parse().unwrap(),
        server_addr: "10.0.1.1:443".parse().unwrap(),
        keylog: None,
        qlog_requested: false,
    };
    let err = QuicheFlow::new(cfg, VirtualClock::new()).unwrap_err();
    assert!(matches!(err, QuicheFlowError::NotInterposed(_)), "{err}");
    let message = err.to_string();
    assert!(message.contains("stack = \"quiche\""), "{message}");
    for arg in LINK_ARGS {
        assert!(message.contains(arg), "{message} names {arg}");
    }
}
