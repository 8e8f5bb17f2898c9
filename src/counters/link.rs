//! The links under a run, watched while it measures: each port's state (sysfs `ports/N/state`)
//! read about once a second by the report clock, never in the hot loop, so that a run that fails
//! can say when its link went down and came back ("the link of rxe0:1 went down at 7.2 s").

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

use super::PortRef;
use crate::stats::JsonObject;
use crate::verbs::port_state_word as state_word;

/// A port's link changing state during the window.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkEvent {
    /// The port.
    pub port: PortRef,
    /// Seconds since the measured window opened.
    pub at_s: f64,
    /// The state it changed to, as sysfs spells it (`DOWN`, `ACTIVE`, `INIT`).
    pub state: String,
}

impl LinkEvent {
    /// True for a change to ACTIVE (the link came back).
    pub fn is_up(&self) -> bool {
        self.state == "ACTIVE"
    }
}

/// One port's state file, kept open: a sample is one `pread` into a stack buffer, no path
/// built and nothing allocated unless the state changed (sysfs makes the text anew at offset 0).
#[derive(Debug)]
struct Watched {
    port: PortRef,
    file: Option<File>,
    /// The state it was last seen in.
    last: String,
}

/// The state of every port of a run, from the start of its window.
#[derive(Debug)]
pub struct LinkLog {
    start: Instant,
    ports: Vec<Watched>,
    events: Vec<LinkEvent>,
}

impl LinkLog {
    /// Reads the state of `ports` under `sys` now: the window opens.
    pub fn start(sys: &Path, ports: &[PortRef]) -> LinkLog {
        let ports = ports
            .iter()
            .map(|p| {
                let file = File::open(state_path(sys, p)).ok();
                let last = file.as_ref().map(read_state).unwrap_or_default();
                Watched {
                    port: p.clone(),
                    file,
                    last,
                }
            })
            .collect();
        LinkLog {
            start: Instant::now(),
            ports,
            events: Vec::new(),
        }
    }

    /// Reads every port's state again and records the changes (one small sysfs read per port).
    pub fn sample(&mut self) {
        for w in &mut self.ports {
            let Some(f) = &w.file else { continue };
            let mut buf = [0u8; 64];
            let n = f.read_at(&mut buf, 0).unwrap_or(0);
            let now = state_word(&buf[..n]);
            if now != w.last && !now.is_empty() {
                self.events.push(LinkEvent {
                    port: w.port.clone(),
                    at_s: self.start.elapsed().as_secs_f64(),
                    state: now.to_string(),
                });
                w.last = now.to_string();
            }
        }
    }

    /// Seconds since the window opened.
    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// What changed, in order.
    pub fn events(&self) -> &[LinkEvent] {
        &self.events
    }
}

/// What happened to the links, as one clause per port ("the link of rxe0:1 went down at 7.2 s
/// and came back at 10.3 s"), or None when every link stayed as it was.
pub fn describe(events: &[LinkEvent]) -> Option<String> {
    let mut ports: Vec<&PortRef> = Vec::new();
    for e in events {
        if !ports.contains(&&e.port) {
            ports.push(&e.port);
        }
    }
    let clauses: Vec<String> = ports
        .into_iter()
        .map(|p| {
            let changes: Vec<String> = events
                .iter()
                .filter(|e| &e.port == p)
                .map(|e| {
                    if e.is_up() {
                        format!("came back at {:.1} s", e.at_s)
                    } else {
                        format!("went {} at {:.1} s", e.state, e.at_s)
                    }
                })
                .collect();
            format!("the link of {} {}", p.label(), changes.join(" and "))
        })
        .collect();
    (!clauses.is_empty()).then(|| clauses.join("; "))
}

/// The events as JSON: `[{"port": "rxe0:1", "at_s": 7.2, "state": "DOWN"}, …]` under a key.
pub fn json(events: &[LinkEvent]) -> Vec<JsonObject> {
    events
        .iter()
        .map(|e| {
            JsonObject::new()
                .str("port", &e.port.label())
                .num("at_s", (e.at_s * 10.0).round() / 10.0)
                .str("state", &e.state)
        })
        .collect()
}

/// A port's state word (`ACTIVE`, `DOWN`, …) from sysfs's `4: ACTIVE`; empty when unreadable.
fn state_path(sys: &Path, p: &PortRef) -> std::path::PathBuf {
    sys.join("class/infiniband")
        .join(&p.device)
        .join("ports")
        .join(p.port.to_string())
        .join("state")
}

fn read_state(f: &File) -> String {
    let mut buf = [0u8; 64];
    let n = f.read_at(&mut buf, 0).unwrap_or(0);
    state_word(&buf[..n]).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::path::PathBuf;

    fn port_dir(root: &Path) -> PathBuf {
        let d = root.join("class/infiniband/rxe0/ports/1");
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_flap_is_two_events_and_one_clause() {
        let root = std::env::temp_dir().join(format!("link-log-{}", std::process::id()));
        let d = port_dir(&root);
        let p = PortRef {
            device: "rxe0".into(),
            port: 1,
        };
        std::fs::write(d.join("state"), "4: ACTIVE\n").unwrap();
        let mut log = LinkLog::start(&root, std::slice::from_ref(&p));
        log.sample();
        assert!(log.events().is_empty());
        std::fs::write(d.join("state"), "1: DOWN\n").unwrap();
        log.sample();
        log.sample();
        std::fs::write(d.join("state"), "4: ACTIVE\n").unwrap();
        log.sample();
        let states: Vec<&str> = log.events().iter().map(|e| e.state.as_str()).collect();
        assert_eq!(states, ["DOWN", "ACTIVE"]);
        let text = describe(log.events()).unwrap();
        assert!(
            text.starts_with("the link of rxe0:1 went DOWN at 0.0 s and came back at 0.0 s"),
            "{text}"
        );
        assert_eq!(describe(&[]), None);
        // An unreadable state is no event.
        std::fs::remove_file(d.join("state")).unwrap();
        log.sample();
        assert_eq!(log.events().len(), 2);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
