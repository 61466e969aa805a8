//! The names scenario keys accept that select something other than a knob type's own enum:
//! a profile, a proxy site, a model with its own keys (the controllers' names live with
//! [`transport::cc_adapter::CcChoice`]). Each set is written once, here or
//! beside the type it names (`choice::names!`), and the registry's allowed values, the docs
//! and the resolver all take it from there.

use choice::choice;

choice! {
    /// `flow.reno_profile`: whose NewReno byte counting.
    pub enum RenoProfile {
        /// Linux's Reno: whole segments, one per window of acknowledged segments.
        Linux = "linux",
        /// RFC 9002's exact byte counting.
        Rfc9002 = "rfc9002",
        /// INET's (OMNeT++) counting, carried across recovery periods.
        Inet = "inet",
    }
}

choice! {
    /// `flow.pep`: where a split-connection proxy sits, if anywhere.
    pub enum PepSite {
        /// No proxy.
        None = "none",
        /// Between the client's access link and the bottleneck.
        ClientSide = "client-side",
        /// Between the bottleneck and the server's access link.
        ServerSide = "server-side",
    }
}

choice! {
    /// `flow.app`: the workload.
    pub enum App {
        /// A saturated sender.
        Bulk = "bulk",
        /// A download of `flow.size` bytes.
        Download = "download",
    }
}

choice! {
    /// `flow.direction` and `cross.direction`.
    pub enum Direction {
        /// Client → server.
        Up = "up",
        /// Server → client.
        Down = "down",
    }
}

choice! {
    /// `link.jitter_dist`.
    pub enum JitterDist {
        /// Uniform in [0, jitter].
        Uniform = "uniform",
        /// Normal with standard deviation `jitter`.
        Normal = "normal",
    }
}

choice! {
    /// `link.loss.model`: each model reads its own keys.
    pub enum LossModel {
        /// No random loss.
        None = "none",
        /// Independent losses with probability `p`.
        Bernoulli = "bernoulli",
        /// One loss every 1/p packets.
        Periodic = "periodic",
        /// The Gilbert-Elliott two-state model.
        GilbertElliott = "gilbert-elliott",
        /// Bernoulli with at most `max_burst` consecutive losses.
        Bounded = "bounded",
    }
}

choice! {
    /// `cross.pattern`.
    pub enum CrossPattern {
        /// Constant rate.
        Cbr = "cbr",
        /// Random sizes and gaps.
        Uniform = "uniform",
        /// Constant rate in bursts.
        OnOff = "onoff",
    }
}

choice! {
    /// `link.qdisc` (or its `model`): the queue discipline of a link direction; each reads its
    /// own keys.
    pub enum QdiscModel {
        /// First in, first out with `link.queue` as the limit (today's queue).
        DropTail = "droptail",
        /// Random Early Detection (`sch_red`), optionally adaptive.
        Red = "red",
        /// Controlled Delay (RFC 8289, `sch_codel`).
        Codel = "codel",
        /// Flow-queue CoDel (RFC 8290, `sch_fq_codel`).
        FqCodel = "fq_codel",
        /// Proportional Integral controller Enhanced (RFC 8033, `sch_pie`).
        Pie = "pie",
        /// Coupled dual queue for L4S (RFC 9332, `sch_dualpi2`).
        DualPi2 = "dualpi2",
    }
}
