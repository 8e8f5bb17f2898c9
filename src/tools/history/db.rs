//! The history database: its schema, opening it (and refusing, untouched, a file that is not
//! ours or whose schema is newer), and reading runs back.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{params_from_iter, Connection, OpenFlags, TransactionBehavior};

use crate::error::{Error, Result};

/// The schema this build reads and writes; a database with another one is refused, never
/// migrated.
pub const SCHEMA_VERSION: i64 = 1;

/// How long a writer waits for another one's transaction (two recorders at once both land).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

const SCHEMA: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    batch INTEGER NOT NULL,          -- one `history record` call
    recorded_at REAL NOT NULL,       -- Unix seconds
    run_at REAL,                     -- the result's own time (--at), Unix seconds
    host TEXT NOT NULL,
    device TEXT,
    port INTEGER,
    firmware TEXT,
    driver TEXT,
    kernel TEXT,
    rdma_core TEXT,
    tool TEXT NOT NULL,
    params TEXT NOT NULL,            -- canonical JSON (sorted keys): equal text = same parameters
    source TEXT NOT NULL,            -- ours, perftest, original, sweep, suite
    file TEXT,
    trusted INTEGER,                 -- 1, 0 (questionable), NULL (nothing said)
    questionable TEXT                -- JSON array of counter classes
);
CREATE INDEX runs_by_shape ON runs (host, device, tool, params, id);
CREATE TABLE metrics (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    name TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    better TEXT NOT NULL CHECK (better IN ('higher', 'lower')),
    PRIMARY KEY (run_id, name)
);
CREATE TABLE counters (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    port TEXT NOT NULL,
    name TEXT NOT NULL,
    delta REAL NOT NULL,
    PRIMARY KEY (run_id, port, name)
);
CREATE TABLE baselines (
    name TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs (id),
    named_at REAL NOT NULL,
    PRIMARY KEY (name, run_id)
);
";

/// An SQLite error on `path` as one line (exit 2: the database is unusable).
pub fn bad(path: &Path, e: rusqlite::Error) -> Error {
    Error::usage(format!("{}: {e}", path.display()))
}

fn tables(conn: &Connection) -> rusqlite::Result<Vec<String>> {
    let mut st = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names = st.query_map([], |r| r.get(0))?;
    names.collect()
}

/// Refuses a database that is not ours or not of [`SCHEMA_VERSION`]; reads only.
fn check_schema(conn: &Connection, path: &Path) -> Result<()> {
    let shown = path.display();
    let version: Option<String> = conn
        .query_row(
            "SELECT value FROM meta WHERE key = 'schema_version'",
            [],
            |r| r.get(0),
        )
        .map_err(|_| {
            Error::usage(format!(
                "{shown}: an SQLite database, but not an rdma-bench history (no meta table \
                 with a schema_version); left untouched"
            ))
        })?;
    match version.as_deref().map(str::parse::<i64>) {
        Some(Ok(v)) if v == SCHEMA_VERSION => Ok(()),
        Some(Ok(v)) if v > SCHEMA_VERSION => Err(Error::usage(format!(
            "{shown}: history schema version {v} is newer than this rdma-bench's \
             ({SCHEMA_VERSION}); left untouched (use a newer rdma-bench)"
        ))),
        other => Err(Error::usage(format!(
            "{shown}: unknown history schema version {}; this rdma-bench reads version \
             {SCHEMA_VERSION} and migrates nothing; left untouched",
            match other {
                Some(_) => version.unwrap_or_default(),
                None => "(none)".into(),
            }
        ))),
    }
}

/// Opens the history at `path`. With `create`, a missing file (or an empty one) becomes a new
/// database in WAL mode; without it, a missing file is an error. A file that is not an SQLite
/// database, or one that is not ours, or of another schema version, is refused before anything
/// is written to it.
pub fn open(path: &Path, create: bool) -> Result<Connection> {
    let shown = path.display();
    let exists = path.exists();
    if !exists && !create {
        return Err(Error::usage(format!(
            "{shown}: no such history database (`rdma-bench history record {shown} FILE…` \
             makes one)"
        )));
    }
    if exists && !path.is_file() {
        return Err(Error::usage(format!("{shown}: not a file")));
    }
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let mut conn = Connection::open_with_flags(path, flags)
        .map_err(|e| Error::config(format!("cannot open or create {shown}: {e}")))?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| bad(path, e))?;
    let found = tables(&conn).map_err(|e| {
        Error::usage(format!(
            "{shown}: not an rdma-bench history database ({e}); left untouched"
        ))
    })?;
    if found.is_empty() {
        if !create {
            return Err(Error::usage(format!(
                "{shown}: an empty database: nothing recorded yet"
            )));
        }
        init(&mut conn, path)?;
    }
    check_schema(&conn, path)?;
    Ok(conn)
}

/// Makes the schema in an empty database; another recorder that got there first wins.
fn init(conn: &mut Connection, path: &Path) -> Result<()> {
    let fail = |e: rusqlite::Error| Error::config(format!("cannot write {}: {e}", path.display()));
    // WAL: readers never block the writer, and a second writer waits (busy timeout). The
    // switch needs the file to itself, and SQLite answers BUSY at once, without the busy
    // handler, while another recorder is creating the same database: retried within the
    // busy timeout.
    let asked = Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(())) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && asked.elapsed() < BUSY_TIMEOUT =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            r => break r.map_err(fail)?,
        }
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(fail)?;
    if tables(&tx).map_err(fail)?.is_empty() {
        tx.execute_batch(SCHEMA).map_err(fail)?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('schema_version', ?1), ('created_by', ?2)",
            (
                SCHEMA_VERSION.to_string(),
                format!("rdma-bench {}", env!("CARGO_PKG_VERSION")),
            ),
        )
        .map_err(fail)?;
    }
    tx.commit().map_err(fail)
}

/// One metric of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    /// Its name (`mops`, `lat_p99_us`, …, as [`crate::tools::results::Metric`] names them).
    pub name: String,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// True for latencies: lower is better.
    pub lower_is_better: bool,
}

/// A stored run, as read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Its id.
    pub id: i64,
    /// The `record` call that stored it.
    pub batch: i64,
    /// Its time (the result's own, else when it was recorded), Unix seconds.
    pub time: f64,
    /// The same, as `2026-05-01T10:00:00Z`.
    pub time_text: String,
    /// Host name.
    pub host: String,
    /// RDMA device.
    pub device: Option<String>,
    /// Its port.
    pub port: Option<i64>,
    /// Firmware, driver, kernel and rdma-core versions, where known.
    pub versions: [Option<String>; 4],
    /// Tool or benchmark.
    pub tool: String,
    /// Parameters, canonical JSON.
    pub params: String,
    /// The counters' verdict.
    pub trusted: Option<bool>,
    /// The classes that made it questionable.
    pub questionable: Vec<String>,
    /// Its metrics, in name order.
    pub metrics: Vec<Value>,
    /// Counter deltas: (port, name, delta).
    pub counters: Vec<(String, String, f64)>,
}

impl Run {
    /// The value of metric `name`.
    pub fn metric(&self, name: &str) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.value)
    }

    /// The parameters as `op=WRITE postlist=1 size=32`.
    pub fn params_text(&self) -> String {
        let v: serde_json::Value = serde_json::from_str(&self.params).unwrap_or_default();
        let Some(o) = v.as_object() else {
            return self.params.clone();
        };
        o.iter()
            .map(|(k, v)| match v {
                serde_json::Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// True when `other` ran the same tool with the same parameters on the same host and device.
    pub fn same_shape(&self, other: &Run) -> bool {
        (&self.host, &self.device, &self.tool, &self.params)
            == (&other.host, &other.device, &other.tool, &other.params)
    }
}

/// Which runs to read.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// These ids only.
    pub ids: Vec<i64>,
    /// This tool only.
    pub tool: Option<String>,
    /// This host only.
    pub host: Option<String>,
    /// The last N (by id) of those.
    pub last: Option<usize>,
}

/// The runs `f` selects, oldest first, with their metrics and counters.
pub fn runs(conn: &Connection, f: &Filter) -> rusqlite::Result<Vec<Run>> {
    let mut sql = String::from(
        "SELECT id, batch, coalesce(run_at, recorded_at), \
         strftime('%Y-%m-%dT%H:%M:%SZ', coalesce(run_at, recorded_at), 'unixepoch'), host, device, \
         port, firmware, driver, kernel, rdma_core, tool, params, trusted, questionable \
         FROM runs WHERE 1",
    );
    let mut args: Vec<rusqlite::types::Value> = Vec::new();
    if !f.ids.is_empty() {
        sql += &format!(" AND id IN ({})", vec!["?"; f.ids.len()].join(","));
        args.extend(f.ids.iter().map(|&i| i.into()));
    }
    for (col, v) in [("tool", &f.tool), ("host", &f.host)] {
        if let Some(v) = v {
            sql += &format!(" AND {col} = ?");
            args.push(v.clone().into());
        }
    }
    sql += " ORDER BY id DESC";
    if let Some(n) = f.last {
        sql += &format!(" LIMIT {n}");
    }
    let mut st = conn.prepare(&sql)?;
    let rows = st.query_map(params_from_iter(args), |r| {
        let q: Option<String> = r.get(14)?;
        Ok(Run {
            id: r.get(0)?,
            batch: r.get(1)?,
            time: r.get(2)?,
            time_text: r.get(3)?,
            host: r.get(4)?,
            device: r.get(5)?,
            port: r.get(6)?,
            versions: [r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?],
            tool: r.get(11)?,
            params: r.get(12)?,
            trusted: r.get::<_, Option<i64>>(13)?.map(|t| t != 0),
            questionable: q
                .and_then(|q| serde_json::from_str(&q).ok())
                .unwrap_or_default(),
            metrics: Vec::new(),
            counters: Vec::new(),
        })
    })?;
    let mut out: Vec<Run> = rows.collect::<rusqlite::Result<_>>()?;
    out.reverse();
    let mut m = conn
        .prepare("SELECT name, value, unit, better FROM metrics WHERE run_id = ?1 ORDER BY name")?;
    let mut c = conn
        .prepare("SELECT port, name, delta FROM counters WHERE run_id = ?1 ORDER BY port, name")?;
    for run in &mut out {
        run.metrics = m
            .query_map([run.id], |r| {
                Ok(Value {
                    name: r.get(0)?,
                    value: r.get(1)?,
                    unit: r.get(2)?,
                    lower_is_better: r.get::<_, String>(3)? == "lower",
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        run.counters = c
            .query_map([run.id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
    }
    Ok(out)
}

/// The runs of the latest `record` call.
pub fn latest_batch(conn: &Connection) -> rusqlite::Result<Vec<i64>> {
    let mut st = conn
        .prepare("SELECT id FROM runs WHERE batch = (SELECT max(batch) FROM runs) ORDER BY id")?;
    let ids = st.query_map([], |r| r.get(0))?;
    ids.collect()
}

/// Runs `ids` that do not exist, if any.
pub fn missing(conn: &Connection, ids: &[i64]) -> rusqlite::Result<Vec<i64>> {
    let mut st = conn.prepare("SELECT count(*) FROM runs WHERE id = ?1")?;
    let mut out = Vec::new();
    for &id in ids {
        if st.query_row([id], |r| r.get::<_, i64>(0))? == 0 {
            out.push(id);
        }
    }
    Ok(out)
}
