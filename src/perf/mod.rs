//! perftest's bandwidth and latency tools (`ib_write_bw`, `ib_read_lat`, …) on rdma-bench's core,
//! wire-compatible with perftest: the same TCP exchange, the same buffers and ping-pong bytes, the
//! same tables.

pub mod args;
pub mod bw;
pub mod channel;
pub mod clock;
mod cm_connect;
#[cfg(has_rdmacm)]
pub mod cm_link;
pub mod cpu;
mod credits;
pub mod family;
pub mod keys;
pub mod lat;
pub mod layout;
mod print;
mod provider;
pub mod qos;
pub mod rate;
pub mod receives;
pub mod report;
pub mod run;
pub mod session;
pub mod settings;
pub mod stats;

/// The suite's runs of the tools (`rdma-bench list --suite`), scaled to one host.
pub const SUITE: &[(Tool, &str)] = &[(Tool::WRITE_LAT, "-s 8 -n 5000")];

/// The operation a test measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
    /// SEND / RECV.
    Send,
    /// Fetch-and-add or compare-and-swap.
    Atomic,
}

/// Bandwidth or latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// Streams of WRs: BW peak and average, message rate.
    Bw,
    /// One operation at a time: latency percentiles.
    Lat,
}

/// One of perftest's tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tool {
    /// What it measures.
    pub verb: Verb,
    /// How.
    pub test: Test,
}

impl Tool {
    /// `ib_write_bw`.
    pub const WRITE_BW: Tool = Tool {
        verb: Verb::Write,
        test: Test::Bw,
    };
    /// `ib_write_lat`.
    pub const WRITE_LAT: Tool = Tool {
        verb: Verb::Write,
        test: Test::Lat,
    };
    /// `ib_read_bw`.
    pub const READ_BW: Tool = Tool {
        verb: Verb::Read,
        test: Test::Bw,
    };
    /// `ib_read_lat`.
    pub const READ_LAT: Tool = Tool {
        verb: Verb::Read,
        test: Test::Lat,
    };
    /// `ib_send_bw`.
    pub const SEND_BW: Tool = Tool {
        verb: Verb::Send,
        test: Test::Bw,
    };
    /// `ib_send_lat`.
    pub const SEND_LAT: Tool = Tool {
        verb: Verb::Send,
        test: Test::Lat,
    };
    /// `ib_atomic_bw`.
    pub const ATOMIC_BW: Tool = Tool {
        verb: Verb::Atomic,
        test: Test::Bw,
    };
    /// `ib_atomic_lat`.
    pub const ATOMIC_LAT: Tool = Tool {
        verb: Verb::Atomic,
        test: Test::Lat,
    };

    /// All eight, in perftest's order of binaries.
    pub const ALL: [Tool; 8] = [
        Tool::WRITE_BW,
        Tool::WRITE_LAT,
        Tool::READ_BW,
        Tool::READ_LAT,
        Tool::SEND_BW,
        Tool::SEND_LAT,
        Tool::ATOMIC_BW,
        Tool::ATOMIC_LAT,
    ];

    /// The tool whose subcommand is `name`.
    pub fn named(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|t| t.name() == name)
    }

    /// What it measures, as `rdma-bench list` says.
    pub fn about(self) -> String {
        let what = match self.verb {
            Verb::Write => "RDMA WRITE",
            Verb::Read => "RDMA READ",
            Verb::Send => "SEND",
            Verb::Atomic => "atomic",
        };
        let how = match self.test {
            Test::Bw => "bandwidth",
            Test::Lat => "latency",
        };
        format!(
            "{what} {how}, as perftest's ib_{}",
            self.name().replace('-', "_")
        )
    }

    /// Our subcommand's name (`write-bw`).
    pub fn name(self) -> &'static str {
        match (self.verb, self.test) {
            (Verb::Write, Test::Bw) => "write-bw",
            (Verb::Write, Test::Lat) => "write-lat",
            (Verb::Read, Test::Bw) => "read-bw",
            (Verb::Read, Test::Lat) => "read-lat",
            (Verb::Send, Test::Bw) => "send-bw",
            (Verb::Send, Test::Lat) => "send-lat",
            (Verb::Atomic, Test::Bw) => "atomic-bw",
            (Verb::Atomic, Test::Lat) => "atomic-lat",
        }
    }
}
