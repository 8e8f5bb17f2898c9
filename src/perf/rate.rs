//! perftest's rate limiter (`--rate_limit`, `--rate_limit_type`, `--rate_units`,
//! `--burst_size`): resolved with perftest 4.5's rules and messages, and the software limiter's
//! pacing of the posting loop (bursts of `burst_size` WRs, one burst per gap, the gap shared by
//! every QP).
//!
//! perftest's hardware limiter sets a static rate on the QPs' paths, which only an InfiniBand
//! link honours: on Ethernet (RoCE, iWARP) perftest falls back to the software limiter when the
//! type was not given, and fails when HW was asked for. rdma-bench does the same before any
//! peer is reached; it does not set static rates on InfiniBand (refused by name there).

use super::args::PerfArgs;
use super::{clock, Test, Tool, Verb};
use crate::error::{Error, Result};

/// The static rates perftest's HW limiter takes (Gb/s, as typed).
const HW_RATES: &[&str] = &[
    "2.5", "5", "10", "14", "20", "25", "30", "40", "56", "60", "80", "100", "112", "120", "168",
    "200", "300", "MAX",
];

/// What `--rate_limit` counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnits {
    /// MB/s (2^20 bytes).
    MegaBytes,
    /// Gb/s (10^9 bits), perftest's default.
    GigaBits,
    /// Packets (messages) per second.
    Packets,
}

/// The limiter a run asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// The rate, in `units`.
    pub rate: f64,
    /// Its units.
    pub units: RateUnits,
    /// WRs per burst (perftest's default: the send queue depth).
    pub burst: u64,
    /// HW was asked for by name (`--rate_limit_type HW`): no fallback to SW.
    pub hw_explicit: bool,
    /// HW (a static rate on the path) rather than SW (paced posting).
    pub hw: bool,
    /// `--burst_size` was given.
    pub burst_given: bool,
}

fn refuse(msg: &str) -> Error {
    Error::config(msg.to_string())
}

impl RateLimit {
    /// perftest's rules for the rate flags of `tool` (`tx_depth` already clipped to the
    /// iterations); None without a limiter.
    pub fn resolve(tool: Tool, a: &PerfArgs, tx_depth: u32) -> Result<Option<RateLimit>> {
        let units = match a.rate_units.as_deref() {
            None | Some("g") => RateUnits::GigaBits,
            Some("M") => RateUnits::MegaBytes,
            Some("p") => RateUnits::Packets,
            Some(_) => return Err(refuse("Invalid rate limit units. Please use M,g or p")),
        };
        let (hw, explicit) = match a.rate_limit_type.as_deref() {
            None => (a.rate_limit.is_some(), false),
            Some("HW") => (true, true),
            Some("SW") => (false, true),
            Some("PP") => return Err(refuse("Packet Pacing is only supported for Raw Ethernet.")),
            Some(_) => {
                return Err(refuse(
                    "Invalid rate limit type flag. Please use HW, SW or PP.",
                ))
            }
        };
        if a.typical_pkt_size.is_some() {
            return Err(refuse("Typical packet size only supports PP rate limiter"));
        }
        let Some(text) = a.rate_limit.as_deref() else {
            if a.burst_size.is_some() {
                return Err(refuse("Can't enable burst mode when rate limiter is off"));
            }
            if explicit {
                return Err(refuse(
                    "--rate_limit_type limits the rate --rate_limit gives: add --rate_limit RATE",
                ));
            }
            return Ok(None);
        };
        let rate: f64 = match text.parse() {
            Ok(r) if r > 0.0 && f64::is_finite(r) => r,
            _ if hw && text == "MAX" => f64::INFINITY,
            _ => return Err(refuse("Rate limit must be non-negative")),
        };
        if tool.test != Test::Bw {
            return Err(refuse("the rate limiter paces BW tests only"));
        }
        if hw {
            if a.rdma_cm {
                return Err(refuse(
                    "HW rate limit isn't supported yet with rdma_cm scenarios",
                ));
            }
            if units == RateUnits::Packets {
                return Err(refuse(
                    "Failed: pps rate limit units is not supported when setting HW rate limit",
                ));
            }
            if !HW_RATES.contains(&text) {
                return Err(Error::config(format!(
                    "The input value for hw rate limit is not supported ({}): Failed: Unknown rate limit value",
                    HW_RATES.join(", ")
                )));
            }
        } else {
            if tool.verb == Verb::Atomic || (tool.verb == Verb::Send && a.bidirectional) {
                return Err(refuse(
                    "SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND tests",
                ));
            }
            if a.run_infinitely {
                return Err(refuse(
                    "run_infinitely does not support rate limit feature yet",
                ));
            }
        }
        let burst = match a.burst_size {
            Some(b) if b > 0 => b,
            _ => u64::from(tx_depth),
        };
        Ok(Some(RateLimit {
            rate,
            units,
            burst,
            hw_explicit: hw && explicit,
            hw,
            burst_given: a.burst_size.is_some_and(|b| b > 0),
        }))
    }

    /// The limiter on a port that is (`ethernet`) or is not Ethernet: HW becomes SW where
    /// perftest's would (with its line on stderr), or is refused.
    pub fn on_link(mut self, device: &str, ethernet: bool) -> Result<RateLimit> {
        if !self.hw {
            if !self.burst_given {
                eprintln!(" Setting burst size to tx depth = {}", self.burst);
            }
            return Ok(self);
        }
        if !ethernet {
            return Err(Error::config(format!(
                "--rate_limit_type HW: static rates on {device}'s InfiniBand paths are not \
                 implemented in rdma-bench yet (--rate_limit_type SW paces the posts)"
            )));
        }
        if self.hw_explicit {
            return Err(Error::config(format!(
                "The QP failed to accept HW rate limit: {device} is Ethernet, whose paths take \
                 no static rate (--rate_limit_type SW paces the posts)"
            )));
        }
        eprintln!("The QP failed to accept HW rate limit, providing SW rate limit");
        self.hw = false;
        self.on_link(device, ethernet)
    }

    /// Messages per second for `size`-byte messages.
    fn messages_per_sec(&self, size: u64) -> f64 {
        match self.units {
            RateUnits::MegaBytes => self.rate * 1048576.0 / size as f64,
            RateUnits::GigaBits => self.rate * 1e9 / (size as f64 * 8.0),
            RateUnits::Packets => self.rate,
        }
    }
}

/// When the posting loop may post: every time, or in paced bursts.
pub(super) trait Pace {
    /// True when a post may go now.
    fn may_post(&mut self) -> bool;
    /// `n` WRs were posted.
    fn posted(&mut self, n: u64);
    /// The last [`Pace::may_post`] said no: an empty poll is the pace, not a stall.
    fn holding(&self) -> bool;
}

/// No limiter: nothing to decide, nothing in the loop.
pub(super) struct Unpaced;

impl Pace for Unpaced {
    #[inline(always)]
    fn may_post(&mut self) -> bool {
        true
    }
    #[inline(always)]
    fn posted(&mut self, _: u64) {}
    #[inline(always)]
    fn holding(&self) -> bool {
        false
    }
}

/// perftest's software limiter: a burst of `burst` WRs, then nothing until `gap` ticks after
/// the burst began.
pub(super) struct Bursts {
    burst: u64,
    gap: u64,
    deadline: u64,
    in_burst: bool,
    sent: u64,
    held: bool,
}

impl Bursts {
    /// The pacing of `limit` for `size`-byte messages. (perftest 4.5 divides messages per
    /// second by the burst in integers, which stalls a rate below one burst a second; here the
    /// division is exact.)
    pub fn new(limit: &RateLimit, size: u64) -> Bursts {
        let bursts_per_sec = limit.messages_per_sec(size) / limit.burst as f64;
        let gap_us = 1e6 / bursts_per_sec;
        Bursts {
            burst: limit.burst,
            gap: (gap_us * clock::ticks_per_us()) as u64,
            deadline: 0,
            in_burst: false,
            sent: 0,
            held: false,
        }
    }
}

impl Pace for Bursts {
    #[inline]
    fn may_post(&mut self) -> bool {
        if !self.in_burst {
            let now = clock::now();
            self.held = now < self.deadline;
            if self.held {
                return false;
            }
            self.deadline = now + self.gap;
            self.in_burst = true;
            self.sent = 0;
        }
        true
    }
    #[inline]
    fn posted(&mut self, n: u64) {
        self.sent += n;
        if self.sent >= self.burst {
            self.in_burst = false;
        }
    }
    #[inline]
    fn holding(&self) -> bool {
        self.held
    }
}
