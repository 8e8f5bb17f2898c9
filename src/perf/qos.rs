//! perftest's QoS and path flags: `-S/--sl`, `--tclass`, `--flow_label` and `--pkey_index` for QPs
//! connected over the TCP exchange, `-T/--tos` and `--retry_count` for RDMA CM (`-R`), and
//! `-L/--hop_limit`, which perftest keeps for raw Ethernet QPs. Checked on the host, before any
//! resource exists; applied to the port ([`Qos::apply`]) and per QP ([`Qos::for_qp`]).

use super::args::PerfArgs;
use crate::error::{Error, Result};
use crate::verbs::{PathQos, Port};

/// perftest's GRH hop limit for RC, UC and UD QPs (it writes 0xFF, whatever `-L` says).
const GRH_HOP_LIMIT: u8 = 0xFF;
/// perftest's default `-L` (DEF_HOP_LIMIT): the only value it accepts outside raw Ethernet.
const DEF_HOP_LIMIT: u64 = 64;
/// perftest's default `--retry_count` (DEF_RETRY_COUNT).
const DEF_RETRY_COUNT: u8 = 7;

/// The resolved flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qos {
    /// `-S`: the service level.
    pub sl: u8,
    /// `--tclass`: the GRH's traffic class.
    pub traffic_class: u8,
    /// `--flow_label`: the flow labels, given round robin to the QPs (none: 0).
    pub flow_labels: Vec<u32>,
    /// `-T`: the RDMA CM connections' type of service.
    pub tos: Option<u8>,
    /// `--retry_count`: the RDMA CM connections' transport retries.
    pub retry_count: u8,
    /// `--pkey_index`.
    pub pkey_index: u16,
}

fn number_upto(v: Option<u64>, max: u64, what: &str) -> Result<Option<u64>> {
    match v {
        Some(n) if n > max => Err(Error::usage(format!("{what} is {n}: it takes 0 to {max}"))),
        v => Ok(v),
    }
}

impl Qos {
    /// Resolves and checks the flags of `a`.
    pub fn resolve(a: &PerfArgs) -> Result<Qos> {
        let sl = number_upto(a.sl, u64::from(PathQos::MAX_SL), "-S/--sl")?;
        let traffic_class = number_upto(a.tclass, 255, "--tclass")?;
        let tos = number_upto(a.tos, 255, "-T/--tos")?;
        let retry_count = number_upto(a.retry_count, 7, "--retry_count (3 bits in the CM's REQ)")?;
        let pkey_index = number_upto(a.pkey_index, u64::from(u16::MAX), "--pkey_index")?;
        let flow_labels = match &a.flow_label {
            None => Vec::new(),
            Some(list) => parse_flow_labels(list)?,
        };
        if let Some(l) = a.hop_limit.filter(|&l| l != DEF_HOP_LIMIT) {
            // perftest's own refusal ("Hop limit only valid for RawEth QP"): its GRH carries 255.
            return Err(Error::config(format!(
                "-L/--hop_limit {l}: perftest sets the hop limit of raw Ethernet QPs only, and \
                 rdma-bench has none; RC, UC and UD QPs send hop limit {GRH_HOP_LIMIT}, as perftest's"
            )));
        }
        if a.rdma_cm {
            // With -R the CM resolves the path: perftest would not apply these, so say so.
            let given = [
                (sl.is_some(), "-S/--sl"),
                (traffic_class.is_some(), "--tclass"),
                (!flow_labels.is_empty(), "--flow_label"),
            ];
            if let Some((_, flag)) = given.iter().find(|(set, _)| *set) {
                return Err(Error::config(format!(
                    "{flag} applies to QPs connected over the TCP exchange; with -R/--rdma_cm \
                     RDMA CM resolves the path: set its traffic class with -T/--tos"
                )));
            }
        } else {
            if tos.is_some() {
                // perftest: "TOS only valid for rdma_cm based QP and RawEth QP".
                return Err(Error::config(
                    "-T/--tos is the type of service of RDMA CM connections: it needs \
                     -R/--rdma_cm (without -R, --tclass sets the GRH's traffic class)",
                ));
            }
            if retry_count.is_some() {
                return Err(Error::config(
                    "--retry_count is RDMA CM's retry count: it needs -R/--rdma_cm (without \
                     -R, QPs retry 7 times, as perftest's)",
                ));
            }
        }
        Ok(Qos {
            sl: sl.unwrap_or(0) as u8,
            traffic_class: traffic_class.unwrap_or(0) as u8,
            flow_labels,
            tos: tos.map(|t| t as u8),
            retry_count: retry_count.map_or(DEF_RETRY_COUNT, |r| r as u8),
            pkey_index: pkey_index.unwrap_or(0) as u16,
        })
    }

    /// The path fields of QP `q` (its flow label, round robin).
    pub fn for_qp(&self, q: usize) -> PathQos {
        PathQos {
            sl: self.sl,
            traffic_class: self.traffic_class,
            flow_label: match self.flow_labels.len() {
                0 => 0,
                n => self.flow_labels[q % n],
            },
            hop_limit: GRH_HOP_LIMIT,
        }
    }

    /// `port` with QP 0's path fields and the P_Key index.
    pub fn apply(&self, port: Port) -> Result<Port> {
        let qos = if port.addressed_by_gid() {
            self.for_qp(0)
        } else {
            // perftest writes its hop limit into a GRH only; this port sends none.
            PathQos {
                hop_limit: crate::verbs::defaults::HOP_LIMIT,
                ..self.for_qp(0)
            }
        };
        let (name, num, len) = (
            port.context().name().to_string(),
            port.num(),
            port.attr().pkey_tbl_len,
        );
        port.with_qos(qos)
            .map_err(|e| Error::config(format!("--tclass and --flow_label: {e}")))?
            .with_pkey_index(self.pkey_index)
            .ok_or_else(|| {
                Error::config(format!(
                    "--pkey_index {}: the P_Key table of {name}:{num} has {len} entries",
                    self.pkey_index
                ))
            })
    }

    /// The path fields of QP `q` on `port` (as [`Qos::apply`] set them, with QP `q`'s flow
    /// label).
    pub fn on_port(&self, port: &Port, q: usize) -> PathQos {
        PathQos {
            flow_label: self.for_qp(q).flow_label,
            ..port.qos()
        }
    }
}

/// `--flow_label fl0,fl1,...`: 20-bit labels (decimal, 0x hex), at least one.
fn parse_flow_labels(list: &str) -> Result<Vec<u32>> {
    list.split(',')
        .map(|f| {
            let n = super::args::parse_number(f)
                .map_err(|e| Error::usage(format!("--flow_label {list:?}: {e}")))?;
            if n > u64::from(PathQos::MAX_FLOW_LABEL) {
                return Err(Error::usage(format!(
                    "--flow_label {list:?}: {n} does not fit the GRH's 20 bits (0 to {})",
                    PathQos::MAX_FLOW_LABEL
                )));
            }
            Ok(n as u32)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(f: impl FnOnce(&mut PerfArgs)) -> PerfArgs {
        let mut a = PerfArgs::default();
        f(&mut a);
        a
    }

    fn err(f: impl FnOnce(&mut PerfArgs)) -> String {
        Qos::resolve(&args(f)).unwrap_err().to_string()
    }

    #[test]
    fn defaults_are_perftests() {
        let q = Qos::resolve(&args(|_| {})).unwrap();
        assert_eq!(
            q.for_qp(3),
            PathQos {
                sl: 0,
                traffic_class: 0,
                flow_label: 0,
                hop_limit: 255
            }
        );
        assert_eq!((q.tos, q.retry_count, q.pkey_index), (None, 7, 0));
        // -L at perftest's default is accepted, as perftest does.
        assert!(Qos::resolve(&args(|a| a.hop_limit = Some(64))).is_ok());
    }

    #[test]
    fn flow_labels_go_round_robin() {
        let q = Qos::resolve(&args(|a| {
            a.flow_label = Some("1,0x20,3".into());
            a.tclass = Some(184);
            a.sl = Some(3);
        }))
        .unwrap();
        let labels: Vec<u32> = (0..4).map(|i| q.for_qp(i).flow_label).collect();
        assert_eq!(labels, [1, 32, 3, 1]);
        assert_eq!((q.for_qp(1).traffic_class, q.for_qp(1).sl), (184, 3));
    }

    #[test]
    fn bad_values_and_combinations_are_refused_by_flag() {
        assert!(err(|a| a.sl = Some(16)).contains("-S/--sl is 16"));
        assert!(err(|a| a.tclass = Some(256)).contains("--tclass is 256"));
        assert!(err(|a| a.flow_label = Some("1,x".into())).contains("--flow_label"));
        assert!(err(|a| a.flow_label = Some("1048576".into())).contains("20 bits"));
        assert!(err(|a| a.hop_limit = Some(9)).contains("-L/--hop_limit 9"));
        assert!(err(|a| a.tos = Some(32)).contains("needs -R/--rdma_cm"));
        assert!(err(|a| a.retry_count = Some(3)).contains("needs -R/--rdma_cm"));
        let cm = |f: fn(&mut PerfArgs)| {
            err(|a| {
                a.rdma_cm = true;
                f(a)
            })
        };
        assert!(cm(|a| a.tclass = Some(8)).contains("with -T/--tos"));
        assert!(cm(|a| a.sl = Some(1)).contains("-S/--sl applies"));
        assert!(cm(|a| a.tos = Some(300)).contains("-T/--tos is 300"));
        assert!(cm(|a| a.retry_count = Some(8)).contains("--retry_count"));
        let q = Qos::resolve(&args(|a| {
            a.rdma_cm = true;
            a.tos = Some(0x68);
            a.retry_count = Some(2);
        }))
        .unwrap();
        assert_eq!((q.tos, q.retry_count), (Some(0x68), 2));
    }
}
