//! One line per flow saying what it does — stack, controller, workload and direction, size or
//! duration — so a run states what it is about to measure before it measures it.

use std::time::Duration;

use choice::Choice;

use crate::load::LoadedScenario;
use crate::model::{FlowSpec, FlowTransport, PepPosition, Scenario, TlsMode, Workload};
use crate::units::{format_duration, format_size};

impl FlowSpec {
    /// What the flow does, e.g. `flow0: quic, cubic, bulk upload (client → server) for 30s`;
    /// `run_duration` ends a flow that has no `stop`.
    pub fn describe(&self, run_duration: Duration) -> String {
        let mut stack = self.stack().name().to_string();
        let zero_rtt = match &self.transport {
            FlowTransport::Tcp { knobs, pep } => {
                stack.push_str(&match knobs.tls {
                    TlsMode::None => " without TLS".to_string(),
                    tls => format!(" + TLS {}", tls.name()),
                });
                if let Some(p) = pep {
                    stack.push_str(match p.position {
                        PepPosition::ClientSide => " via a client-side PEP",
                        PepPosition::ServerSide => " via a server-side PEP",
                    });
                }
                false
            }
            FlowTransport::Quic(k) => k.common.zero_rtt,
            FlowTransport::QuicModel(k) => k.common.zero_rtt,
            FlowTransport::Quiche(k) => k.zero_rtt,
        };
        let start = if self.start.is_zero() {
            String::new()
        } else {
            format!(" from {}", format_duration(self.start))
        };
        let work = match self.workload {
            Workload::Bulk { upload } => {
                let end = self.stop.unwrap_or(run_duration).min(run_duration);
                let way = if upload {
                    "upload (client → server)"
                } else {
                    "download (server → client)"
                };
                format!(
                    "bulk {way}{start} for {}",
                    format_duration(end.saturating_sub(self.start))
                )
            }
            Workload::Download {
                size,
                streams,
                connections,
            } => {
                let streams = if streams == 1 {
                    String::new()
                } else {
                    format!(" over {streams} streams")
                };
                let connections = match connections {
                    1 => String::new(),
                    n => format!(
                        ", {n} connections one after the other{}",
                        if zero_rtt {
                            " (0-RTT from the second)"
                        } else {
                            ""
                        }
                    ),
                };
                format!(
                    "download of {} (server → client){streams}{connections}{start}",
                    format_size(size)
                )
            }
        };
        format!("{}: {stack}, {}, {work}", self.name, self.cc.name())
    }
}

impl Scenario {
    /// [`FlowSpec::describe`] of every flow, in order.
    pub fn describe_flows(&self) -> Vec<String> {
        self.flows
            .iter()
            .map(|f| f.describe(self.duration))
            .collect()
    }
}

impl LoadedScenario {
    /// The flow descriptions of every sweep point, each distinct line once, in order of first
    /// appearance: a sweep of 1000 runs over the link prints its flows once, a sweep of the
    /// controller prints each flow once per controller.
    pub fn describe_flows(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for p in &self.points {
            for line in p.scenario.describe_flows() {
                if seen.insert(line.clone()) {
                    out.push(line);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::parse_str;

    fn describe(text: &str, axes: &[&str]) -> Vec<String> {
        let axes: Vec<String> = axes.iter().map(|s| s.to_string()).collect();
        parse_str(text, "t.toml", Path::new("."), &[], &axes)
            .unwrap_or_else(|e| panic!("{e}"))
            .describe_flows()
    }

    #[test]
    fn each_flow_is_one_line_of_stack_controller_workload_and_extent() {
        assert_eq!(
            describe("[[flow]]\ncc = \"cubic\"\n", &[]),
            ["flow0: quic, cubic, bulk upload (client → server) for 30s"]
        );
        assert_eq!(
            describe(
                "[run]\nduration = \"10s\"\n[[flow]]\nname = \"b\"\ndirection = \"down\"\nstart = \"1s\"\nstop = \"5s\"\n",
                &[]
            ),
            ["b: quic, newreno, bulk download (server → client) from 1s for 4s"]
        );
        assert_eq!(
            describe(
                "[[flow]]\nname = \"page\"\napp = \"download\"\nsize = \"100kB\"\nconnections = 2\nzero_rtt = true\n\
                 [[flow]]\nstack = \"tcp\"\napp = \"download\"\nsize = \"1MB\"\nstreams = 4\npep = \"client-side\"\n",
                &[]
            ),
            [
                "page: quic, newreno, download of 100KB (server → client), 2 connections one after the other (0-RTT from the second)",
                "flow1: tcp + TLS 1.3 via a client-side PEP, newreno, download of 1MB (server → client) over 4 streams",
            ]
        );
    }

    #[test]
    fn a_sweep_describes_each_distinct_flow_once() {
        // Six points, one flow line: the link does not change what the flow does.
        assert_eq!(
            describe(
                "[[flow]]\n",
                &["link.delay=1ms,2ms,3ms", "link.rate=1Mbit,2Mbit"]
            ),
            ["flow0: quic, newreno, bulk upload (client → server) for 30s"]
        );
        assert_eq!(
            describe(
                "[[flow]]\n",
                &["flow.cc=newreno,cubic", "link.delay=1ms,2ms"]
            ),
            [
                "flow0: quic, newreno, bulk upload (client → server) for 30s",
                "flow0: quic, cubic, bulk upload (client → server) for 30s",
            ]
        );
    }
}
