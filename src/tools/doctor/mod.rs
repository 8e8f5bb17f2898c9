//! `rdma-bench doctor`: is this host set up to benchmark RDMA? Devices and ports, the GID our
//! tools will pick, PCIe and NUMA placement, hugepages, the locked-memory limit, the CPU
//! governor and SMT. Each finding is a verdict line (ok / warn / fail) with a fix a person can
//! run. Reads sysfs and verbs only; never changes the system.

mod device;
mod host;
#[cfg(test)]
mod tests;

pub(crate) use device::{driver as device_driver, firmware as device_firmware};

use crate::error::{Error, Result};
use crate::stats::JsonObject;

/// `rdma-bench doctor`'s flags.
#[derive(clap::Args, Debug, Clone)]
pub struct DoctorArgs {
    /// Only this RDMA device [default: every device]
    #[arg(long, short = 'd', value_name = "NAME")]
    pub device: Option<String>,
    /// One JSON object per finding, then a summary object, instead of the verdict lines
    #[arg(long)]
    pub json: bool,
}

/// How a finding bears on a benchmark run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Fine.
    Ok,
    /// Runs, but the numbers may suffer or mislead.
    Warn,
    /// A benchmark will fail.
    Fail,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warn => "warn",
            Verdict::Fail => "fail",
        }
    }
}

/// One thing the doctor looked at.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The verdict.
    pub verdict: Verdict,
    /// What was looked at (e.g. `port mlx5_0:1`).
    pub subject: String,
    /// What was found.
    pub text: String,
    /// What to run or change, for warn and fail.
    pub fix: Option<String>,
}

fn finding(verdict: Verdict, subject: &str, text: String, fix: Option<String>) -> Finding {
    Finding {
        verdict,
        subject: subject.to_string(),
        text,
        fix,
    }
}

/// Runs every check and prints the findings; an error (exit 1) when one would make a benchmark
/// fail.
pub fn run(a: DoctorArgs) -> Result<()> {
    let mut found = vec![build()];
    found.extend(device::devices(a.device.as_deref()));
    found.extend(host::host(std::path::Path::new("/sys")));
    let mut text = String::new();
    for f in &found {
        if a.json {
            let mut o = JsonObject::new()
                .str("verdict", f.verdict.name())
                .str("subject", &f.subject)
                .str("text", &f.text);
            if let Some(fix) = &f.fix {
                o = o.str("fix", fix);
            }
            text += &format!("{}\n", o.finish());
        } else {
            text += &format!("[{:<4}] {}: {}\n", f.verdict.name(), f.subject, f.text);
            if let Some(fix) = &f.fix {
                text += &format!("       fix: {fix}\n");
            }
        }
    }
    let count = |v| found.iter().filter(|f| f.verdict == v).count();
    let (fails, warns) = (count(Verdict::Fail), count(Verdict::Warn));
    if a.json {
        let o = JsonObject::new()
            .bool("summary", true)
            .int("ok", count(Verdict::Ok) as u64)
            .int("warn", warns as u64)
            .int("fail", fails as u64);
        text += &format!("{}\n", o.finish());
    } else {
        text += &format!("doctor: {fails} fail, {warns} warn\n");
    }
    // A reader that stopped early (`| head`) is not an error of ours.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    if fails > 0 {
        return Err(Error::config(format!(
            "{fails} finding(s) will make a benchmark fail (see the [fail] lines)"
        )));
    }
    Ok(())
}

/// What this binary was built against: the optional parts of rdma-core its headers offered.
fn build() -> Finding {
    use crate::build_info::{FEATURES, VERBS_LIB_DIR};
    let from = if VERBS_LIB_DIR.is_empty() {
        "the system's rdma-core".to_string()
    } else {
        format!("rdma-core in {VERBS_LIB_DIR}")
    };
    let parts: Vec<String> = FEATURES
        .iter()
        .map(|(name, on, _)| format!("{name} {}", if *on { "on" } else { "off" }))
        .collect();
    let off: Vec<&str> = FEATURES.iter().filter(|f| !f.1).map(|f| f.2).collect();
    let text = format!("built against {from}: {}", parts.join(", "));
    if off.is_empty() {
        finding(Verdict::Ok, "build", text, None)
    } else {
        finding(
            Verdict::Warn,
            "build",
            format!("{text}; not available: {}", off.join("; ")),
            Some(
                "rebuild against rdma-core >= v32 with librdmacm (see docs/portability.md)".into(),
            ),
        )
    }
}

fn read_trim(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}
