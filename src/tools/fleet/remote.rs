//! One measurement between two hosts over ssh: the perftest-compatible tool's server on one
//! host, its client on the other, both bounded (ssh's connect timeout, `timeout` on both ends),
//! the client's table and both sides' counter lines read back.

use std::time::Duration;

use crate::control::Attention;
use crate::error::Error;
use crate::tools::child;
use crate::tools::results::{self, Kind, Metric};

use super::verdict::Direction;

/// Which tool measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// `write-bw -D`: perftest's BW average, MB/s.
    Bw,
    /// `write-lat -n`: perftest's t_typical, µs.
    Lat,
}

impl Test {
    /// The tool's subcommand.
    pub fn tool(self) -> &'static str {
        match self {
            Test::Bw => "write-bw",
            Test::Lat => "write-lat",
        }
    }
}

/// How every measurement of a fleet run is made.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The ssh command and its options, before the host.
    pub ssh: Vec<String>,
    /// rdma-bench on the remote hosts.
    pub bin: String,
    /// Flags given to every tool (device, GID index, …).
    pub tool_flags: Vec<String>,
    /// write-bw's message size.
    pub size: u64,
    /// write-bw's -D seconds.
    pub duration: u64,
    /// write-lat's -n.
    pub lat_iters: u64,
    /// Stops the ssh sessions on Ctrl-C.
    pub attention: Attention,
}

/// How long a client keeps trying to reach its server (both start at once over ssh).
const CONNECT_TIMEOUT: u64 = 30;

/// Quotes `s` for the remote shell.
fn sh_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,@+%".contains(c))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

impl Launcher {
    /// The longest a tool may run, on top of what it measures.
    fn bound(&self, test: Test) -> Duration {
        let measured = match test {
            Test::Bw => self.duration,
            // Latency runs are short; a slow host gets its setup time.
            Test::Lat => 10,
        };
        Duration::from_secs(measured + CONNECT_TIMEOUT + 30)
    }

    fn ssh_argv(&self, host: &str, remote: &[String], bound: Duration) -> Vec<String> {
        let mut cmd = vec!["timeout".into(), bound.as_secs().to_string()];
        cmd.extend(remote.iter().cloned());
        let line = cmd
            .iter()
            .map(|a| sh_quote(a))
            .collect::<Vec<_>>()
            .join(" ");
        // The local `timeout` outlives the remote one, and kills an ssh that hangs.
        let mut argv = vec![
            "timeout".into(),
            "-k".into(),
            "5".into(),
            (bound.as_secs() + 15).to_string(),
        ];
        argv.extend(self.ssh.iter().cloned());
        argv.push(host.to_string());
        argv.push(line);
        argv
    }

    /// Whether `host` answers over ssh (and has the binary): None when it does, else why not.
    pub fn unreachable(&self, host: &str) -> Option<String> {
        let remote = vec!["test".into(), "-x".into(), self.bin.clone()];
        // A host that does not answer fails on ssh's ConnectTimeout; this bound is for one
        // that answers slowly (a loaded host: one CI boot saw three starved guests pass 20 s).
        let argv = self.ssh_argv(host, &remote, Duration::from_secs(45));
        match child::run(&argv, &[], self.attention, None) {
            Ok(o) if o.code == Some(0) => None,
            Ok(o) if o.code == Some(1) => Some(format!("{} is not there", self.bin)),
            Ok(o) => {
                let last = o.output.lines().rev().find(|l| !l.trim().is_empty());
                Some(format!(
                    "ssh failed ({}){}",
                    o.code.map_or("killed".into(), |c| format!("exit {c}")),
                    last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
                ))
            }
            Err(e) => Some(e.to_string()),
        }
    }

    fn tool_argv(&self, test: Test, server: Option<&str>, port: u16) -> Vec<String> {
        let mut a = vec![self.bin.clone(), test.tool().into()];
        if let Some(s) = server {
            a.push(s.into());
            a.extend(["--connect-timeout".into(), CONNECT_TIMEOUT.to_string()]);
        }
        a.extend(["-p".into(), port.to_string()]);
        match test {
            Test::Bw => a.extend([
                "-s".into(),
                self.size.to_string(),
                "-D".into(),
                self.duration.to_string(),
            ]),
            Test::Lat => a.extend(["-n".into(), self.lat_iters.to_string()]),
        }
        a.extend(self.tool_flags.iter().cloned());
        a
    }

    /// `test` with `client` sending to `server` (its address as the client reaches it), on
    /// TCP port `port`: the value, the counter lines and any error, plus both sides' output.
    pub fn measure(
        &self,
        test: Test,
        client: &str,
        server: &str,
        port: u16,
    ) -> (Direction, String) {
        let bound = self.bound(test);
        let srv = self.ssh_argv(server, &self.tool_argv(test, None, port), bound);
        let cli = self.ssh_argv(client, &self.tool_argv(test, Some(server), port), bound);
        let (s, c) = std::thread::scope(|sc| {
            let s = sc.spawn(|| child::run(&srv, &[], self.attention, None));
            let c = child::run(&cli, &[], self.attention, None);
            (
                s.join()
                    .unwrap_or_else(|_| Err(Error::config("the server's thread died"))),
                c,
            )
        });
        let mut d = Direction {
            trusted: true,
            ..Direction::default()
        };
        let mut log = String::new();
        for (side, out) in [("client", &c), ("server", &s)] {
            let text = match out {
                Ok(o) => {
                    if o.code != Some(0) && !o.interrupted {
                        let last = o.output.lines().rev().find(|l| !l.trim().is_empty());
                        d.errors.push(format!(
                            "{} {side} {}{}",
                            test.tool(),
                            o.code
                                .map_or("was killed (timeout)".into(), |c| format!("exit {c}")),
                            last.map(|l| format!(": {}", l.trim())).unwrap_or_default()
                        ));
                    }
                    o.output.as_str()
                }
                Err(e) => {
                    d.errors.push(format!("{} {side}: {e}", test.tool()));
                    ""
                }
            };
            for l in text.lines().filter(|l| l.starts_with("main: counters ")) {
                d.trusted &= !l.contains("questionable:");
                d.counters.push(format!("{side}: {}", &l["main: ".len()..]));
            }
            log.push_str(&format!(
                "== {side} ({}):\n{text}\n",
                if side == "client" { client } else { server }
            ));
        }
        if let Ok(o) = &c {
            let value = value_of(test, &o.output);
            match (test, value) {
                (Test::Bw, v) => d.bw_mbps = v,
                (Test::Lat, v) => d.lat_us = v,
            }
            if value.is_none() && d.errors.is_empty() {
                d.errors
                    .push(format!("{} client printed no result", test.tool()));
            }
        }
        (d, log)
    }
}

/// The value a tool's client printed: BW average (MB/s) or t_typical (µs), from its table.
fn value_of(test: Test, output: &str) -> Option<f64> {
    results::parse(output)
        .into_iter()
        .filter(|m| m.kind == Kind::Summary)
        .find_map(|m| match test {
            Test::Bw => m.metrics.get(Metric::BwMbps),
            Test::Lat => m.metrics.get(Metric::LatMedianUs),
        })
}

#[cfg(test)]
mod tests {
    use super::{sh_quote, value_of, Test};

    #[test]
    fn the_clients_tables_give_the_values() {
        let bw = include_str!("../../../tests/data/compare/ours-write-bw-s32.txt");
        let lat = include_str!("../../../tests/data/compare/ours-write-lat-s8.txt");
        assert!(value_of(Test::Bw, bw).is_some_and(|v| v > 0.0), "{bw}");
        assert!(value_of(Test::Lat, lat).is_some_and(|v| v > 0.0), "{lat}");
        assert_eq!(value_of(Test::Lat, bw), None);
    }

    #[test]
    fn remote_arguments_are_quoted_for_the_shell() {
        assert_eq!(sh_quote("rxe0"), "rxe0");
        assert_eq!(
            sh_quote("/opt/rdma bench/rdma-bench"),
            "'/opt/rdma bench/rdma-bench'"
        );
        assert_eq!(sh_quote("it's"), r"'it'\''s'");
        assert_eq!(sh_quote(""), "''");
    }
}
