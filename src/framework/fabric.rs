//! The fabric under a run: the ports its threads opened, their counters at the start and the
//! end of the measured window (the verdict under the summary), and their link state about once a
//! second in between (the report clock's step, never the hot loop), so that a failure can say
//! what the link did ("the link of rxe0:1 went DOWN at 7.2 s").

use std::path::Path;
use std::sync::Mutex;

use crate::counters::{link, LinkLog, PortRef, Tolerance, Verdict, Watch};
use crate::error::Error;
use crate::verbs::Port;

/// Where the counters are.
const SYSFS: &str = "/sys";

/// The counters that say a link went down (the port's, and the netdev's carrier).
const LINK_CHANGES: &[&str] = &["link_downed", "counters/link_downed", "net:carrier_changes"];

/// See the module docs.
pub(crate) struct Fabric {
    ports: Mutex<Vec<PortRef>>,
    window: Mutex<Option<Window>>,
    tolerance: Tolerance,
}

/// The measured window's view of the ports.
struct Window {
    counters: Watch,
    links: LinkLog,
    /// When a thread's measurement first failed, in seconds of the window.
    failed_at: Option<f64>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Fabric {
    pub(crate) fn new(tolerance: Tolerance) -> Fabric {
        Fabric {
            ports: Mutex::new(Vec::new()),
            window: Mutex::new(None),
            tolerance,
        }
    }

    /// A thread opened `port`: it is watched from the start of the window. True when no thread
    /// had opened it before.
    pub(crate) fn add(&self, port: &Port) -> bool {
        let p = PortRef {
            device: port.context().name().to_string(),
            port: port.num(),
        };
        let mut ports = lock(&self.ports);
        let new = !ports.contains(&p);
        if new {
            ports.push(p);
        }
        new
    }

    /// The window opens: the first thread past the common start reads every port once.
    pub(crate) fn start(&self) {
        let mut window = lock(&self.window);
        if window.is_none() {
            let ports = lock(&self.ports);
            let sys = Path::new(SYSFS);
            *window = Some(Window {
                counters: Watch::start(sys, &ports, self.tolerance.clone()),
                links: LinkLog::start(sys, &ports),
                failed_at: None,
            });
        }
    }

    /// Reads the link states, if the window is open (the report clock's step, once a second).
    pub(crate) fn sample_links(&self) {
        if let Some(w) = lock(&self.window).as_mut() {
            w.links.sample();
        }
    }

    /// A thread's measurement failed: the links are read now (the error may come before the
    /// next second's read), and the first failure's time kept.
    pub(crate) fn failed(&self) {
        if let Some(w) = lock(&self.window).as_mut() {
            w.links.sample();
            w.failed_at.get_or_insert(w.links.elapsed_s());
        }
    }

    /// `e` with what the links did during the window, if they did anything: "…; the link of
    /// rxe0:1 went DOWN at 7.2 s; the run failed at 7.7 s". A link that went down and came back
    /// between two reads (the thread that reads them was waiting for a completion) is known by
    /// its counters: "the link of rxe0:1 went down and came back (link_downed +1)".
    pub(crate) fn explain(&self, e: Error) -> Error {
        let mut window = lock(&self.window);
        let Some(w) = window.as_mut() else {
            return e;
        };
        w.links.sample();
        let seen = link::describe(w.links.events());
        let counted = || {
            let verdict = w.counters.finish();
            let clauses: Vec<String> = verdict
                .reports
                .iter()
                .filter(|r| !w.links.events().iter().any(|ev| ev.port == r.port))
                .filter_map(|r| {
                    let moved: Vec<String> = r
                        .deltas
                        .iter()
                        .filter(|d| LINK_CHANGES.contains(&d.name.as_str()))
                        .map(|d| format!("{} +{}", d.name, d.by))
                        .collect();
                    (!moved.is_empty()).then(|| {
                        format!(
                            "the link of {} went down and came back ({})",
                            r.port.label(),
                            moved.join(", ")
                        )
                    })
                })
                .collect();
            (!clauses.is_empty()).then(|| clauses.join("; "))
        };
        let what = match (seen, counted()) {
            (Some(a), Some(b)) => a + "; " + &b,
            (a, b) => match a.or(b) {
                Some(w) => w,
                None => return e,
            },
        };
        let at = w.failed_at.unwrap_or_else(|| w.links.elapsed_s());
        e.noted(format!("{what}; the run failed at {at:.1} s"))
    }

    /// The window closed: what the counters and links say (nothing, if it never opened).
    pub(crate) fn finish(&self) -> Verdict {
        let mut window = lock(&self.window);
        let Some(w) = window.as_mut() else {
            return Verdict::default();
        };
        w.links.sample();
        let mut verdict = w.counters.finish();
        verdict.links = w.links.events().to_vec();
        verdict
    }
}
