//! What a tool prints on stdout, as perftest prints it: its tables, or with `--output` one
//! number per size and nothing else (no headers, no closing lines); and the `-w`/`-y` verdict on
//! the last BW row printed.

use super::report::{bw_row, lat_duration_row, lat_row, BW_HEADER, BW_HEADER_GBITS, RESULT_LINE};
use super::settings::{Output, Settings};
use super::stats::{BwRow, LatencyStats};
use crate::error::{Error, Result};

/// The side's stdout: its format, and the last BW row it printed (for `-w`/`-y`).
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    gbits: bool,
    output: Option<Output>,
    last_bw: Option<BwRow>,
}

impl Printer {
    /// The format `settings` ask for.
    pub fn of(settings: &Settings) -> Printer {
        Printer {
            gbits: settings.gbits,
            output: settings.output,
            last_bw: None,
        }
    }

    /// This format with the tables whatever `--output` says (perftest's `--report-both` blocks).
    pub fn with_tables(self) -> Printer {
        Printer {
            output: None,
            ..self
        }
    }

    /// perftest's tables (no `--output`).
    pub fn full(&self) -> bool {
        self.output.is_none()
    }

    /// A line of the tables (headers, result lines): nothing with `--output`.
    pub fn decoration(&self, line: &str) {
        if self.full() {
            println!("{line}");
        }
    }

    /// The BW header line, with `cpu`'s column.
    pub fn bw_header(&self, cpu: &str) {
        let header = if self.gbits {
            BW_HEADER_GBITS
        } else {
            BW_HEADER
        };
        self.decoration(RESULT_LINE);
        self.decoration(&format!("{header}{cpu}"));
    }

    /// A BW row, or its `--output` number (perftest's `%lf`).
    pub fn bw(&mut self, r: &BwRow) {
        self.last_bw = Some(*r);
        match self.output {
            Some(Output::Bandwidth) => println!("{:.6}", r.avg),
            Some(Output::MessageRate) => println!("{:.6}", r.msg_rate),
            _ => println!("{}", bw_row(r, self.gbits)),
        }
    }

    /// A latency row, or its average with `--output latency`.
    pub fn lat(&self, size: u64, iters: u64, stats: &LatencyStats) {
        match self.output {
            Some(_) => println!("{:.6}", stats.avg),
            None => println!("{}", lat_row(size, iters, stats)),
        }
    }

    /// A `-D` latency row, or its average with `--output latency`.
    pub fn lat_duration(&self, size: u64, iters: u64, avg: f64, tps: f64, cpu: Option<f64>) {
        match self.output {
            Some(_) => println!("{avg:.6}"),
            None => println!("{}", lat_duration_row(size, iters, avg, tps, cpu)),
        }
    }

    /// `-w` and `-y` against the last BW row printed (in its unit: MB/s or Gb/s, Mpps):
    /// perftest's messages, as a failed gate. perftest 4.5 checks `-y` only when `-w` is given
    /// too; here each stands alone.
    pub fn check_limits(&self, settings: &Settings) -> Result<()> {
        let Some(r) = self.last_bw else {
            return Ok(());
        };
        if settings.limit_bw.is_some_and(|l| r.avg < l) {
            return Err(Error::Finding("Error: BW result is below bw limit".into()));
        }
        if settings.limit_msgrate.is_some_and(|l| r.msg_rate < l) {
            return Err(Error::Finding(
                "Error: Msg rate is below msg_rate limit".into(),
            ));
        }
        Ok(())
    }
}
