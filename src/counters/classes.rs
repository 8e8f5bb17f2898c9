//! What a counter's name says about the fabric: the class its movement belongs to. Names are the
//! kernel's, as the providers spell them (mlx5's and rxe's `hw_counters`, the IB spec's port
//! `counters`, the netdev's `statistics`); a name not listed here is `Other` (kept in the JSON,
//! never flagged).

/// The class of a counter's movement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// Retransmissions and sequence errors: packets were lost or reordered and sent again.
    Retransmission,
    /// Receiver not ready: a SEND found no RECV posted (RNR NAKs, buffer overruns).
    Rnr,
    /// Congestion control: ECN marks, CNPs, pause frames, transmit waits.
    Congestion,
    /// The link and the physical layer: link down, symbol and receive errors, discards.
    Link,
    /// A transfer failed for good: retries exhausted, error completions.
    Fatal,
    /// Traffic (bytes, packets, requests): what the run moved, not a fault.
    Traffic,
    /// A name this list does not know.
    Other,
}

impl Class {
    /// Its name in the counter line and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Class::Retransmission => "retransmission",
            Class::Rnr => "rnr",
            Class::Congestion => "congestion",
            Class::Link => "link",
            Class::Fatal => "fatal",
            Class::Traffic => "traffic",
            Class::Other => "other",
        }
    }

    /// The class named `s` ([`Class::name`]).
    pub fn parse(s: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Every class, in the order the counter line lists them.
    pub const ALL: [Class; 7] = [
        Class::Fatal,
        Class::Link,
        Class::Retransmission,
        Class::Rnr,
        Class::Congestion,
        Class::Other,
        Class::Traffic,
    ];
}

const RETRANSMISSION: &[&str] = &[
    "duplicate_request",
    "out_of_seq_request",
    "out_of_sequence",
    "packet_seq_err",
    "implied_nak_seq_err",
    "local_ack_timeout_err",
    "completer_retry_err",
    "rcvd_seq_err",
    "roce_adp_retrans",
    "roce_adp_retrans_to",
    "roce_slow_restart",
    "roce_slow_restart_trans",
    "duplicate_request_packets",
    "out_of_sequence_packets",
];

const RNR: &[&str] = &[
    "rnr_nak_retry_err",
    "rcvd_rnr_err",
    "send_rnr_err",
    "out_of_buffer",
    "rx_out_of_buffer",
    "rnr_nak_received",
];

const CONGESTION: &[&str] = &[
    "np_cnp_sent",
    "np_ecn_marked_roce_packets",
    "rp_cnp_handled",
    "rp_cnp_ignored",
    "roce_slow_restart_cnps",
    "port_xmit_wait",
    "rx_pause_ctrl_phy",
    "tx_pause_ctrl_phy",
    "rx_pause",
    "tx_pause",
    "rx_prio_pause",
    "tx_prio_pause",
    "rx_global_pause",
    "tx_global_pause",
];

const LINK: &[&str] = &[
    "link_downed",
    "link_error_recovery",
    "symbol_error",
    "port_rcv_errors",
    "port_xmit_discards",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
    "rx_icrc_encapsulated",
    // The netdev's statistics (`net:` names).
    "net:rx_errors",
    "net:tx_errors",
    "net:rx_dropped",
    "net:tx_dropped",
    "net:rx_crc_errors",
    "net:rx_frame_errors",
    "net:rx_fifo_errors",
    "net:tx_fifo_errors",
    "net:rx_missed_errors",
    "net:rx_over_errors",
    "net:tx_carrier_errors",
    "net:tx_aborted_errors",
    "net:carrier_changes",
];

const FATAL: &[&str] = &[
    "retry_exceeded_err",
    "retry_rnr_exceeded_err",
    "req_transport_retries_exceeded",
    "req_rnr_retries_exceeded",
    "req_cqe_error",
    "resp_cqe_error",
    "req_cqe_flush_error",
    "resp_cqe_flush_error",
    "req_remote_access_errors",
    "resp_remote_access_errors",
    "req_remote_invalid_request",
    "resp_local_length_error",
    "send_err",
];

const TRAFFIC: &[&str] = &[
    "sent_pkts",
    "rcvd_pkts",
    "rdma_sends",
    "rdma_recvs",
    "ack_deferred",
    "port_xmit_data",
    "port_rcv_data",
    "port_xmit_packets",
    "port_rcv_packets",
    "unicast_xmit_packets",
    "unicast_rcv_packets",
    "multicast_xmit_packets",
    "multicast_rcv_packets",
    "rx_write_requests",
    "rx_read_requests",
    "rx_atomic_requests",
    "rx_dct_connect",
    "lifespan",
    "net:rx_bytes",
    "net:tx_bytes",
    "net:rx_packets",
    "net:tx_packets",
    "net:multicast",
    "net:collisions",
];

/// The class of the counter named `name` (a `net:` name is the netdev's).
pub fn class_of(name: &str) -> Class {
    let is = |list: &[&str]| list.contains(&name);
    if is(FATAL) {
        Class::Fatal
    } else if is(LINK) {
        Class::Link
    } else if is(RETRANSMISSION) {
        Class::Retransmission
    } else if is(RNR) {
        Class::Rnr
    } else if is(CONGESTION) {
        Class::Congestion
    } else if is(TRAFFIC) || name.ends_with("_bytes") || name.ends_with("_packets") {
        Class::Traffic
    } else {
        Class::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_providers_names_fall_in_their_classes() {
        for (name, class) in [
            ("duplicate_request", Class::Retransmission),
            ("out_of_sequence", Class::Retransmission),
            ("roce_adp_retrans", Class::Retransmission),
            ("rnr_nak_retry_err", Class::Rnr),
            ("np_cnp_sent", Class::Congestion),
            ("link_downed", Class::Link),
            ("net:carrier_changes", Class::Link),
            ("retry_exceeded_err", Class::Fatal),
            ("port_xmit_data", Class::Traffic),
            ("rx_vport_rdma_unicast_bytes", Class::Traffic),
            ("something_new", Class::Other),
        ] {
            assert_eq!(class_of(name), class, "{name}");
        }
        for c in Class::ALL {
            assert_eq!(Class::parse(c.name()), Some(c));
        }
    }
}
