//! Each tool's conversation with its peer, in perftest's order (which handshake when, who runs
//! what, who prints which table), and the tables and JSON at the end.

use super::args::PerfArgs;
use super::bw::{post_side, warm_up};
use super::channel::{BwReport, Wait};
use super::clock;
use super::lat::{read_round_trips, send_ping_pong, send_receives, write_ping_pong, LatRun};
use super::print::Printer;
use super::receives::{receive_side, Receives};
use super::report::{
    bw_json, json_document, lat_duration_json, lat_json, CPU_HEADER, LAT_DURATION_HEADER,
    LAT_HEADER, RESULT_LINE,
};
use super::session::Session;
use super::settings::Length;
use super::stats::{BwRow, LatencyStats};
use super::{Test, Tool, Verb};
use crate::control::install_stop_signals;
use crate::counters::Named;
use crate::error::{Error, Result};
use crate::stats::JsonObject;

/// Runs `tool` with `a` (perftest flags that we do not implement were refused by name before
/// the command line was parsed: [`super::args::refuse_unimplemented`]).
pub fn run(tool: Tool, a: PerfArgs) -> Result<()> {
    // Bad combinations are refused before anything is made or timed.
    let settings = super::settings::Settings::resolve(tool, &a)?;
    if a.perform_warm_up && !settings.warm_up {
        eprintln!(
            "note: --perform_warm_up has no effect in {} (perftest warms up the write, read and \
             atomic BW tests only, and ignores it elsewhere too)",
            tool.name()
        );
    }
    if a.inline_recv.is_some() {
        eprintln!("note: --inline_recv has no effect (perftest 4.5 parses it and ignores it too)");
    }
    let attention = install_stop_signals()?;
    if settings.cpu_util {
        super::cpu::enable();
    }
    // Calibrate before anything is timed (perftest's get_cpu_mhz).
    clock::ticks_per_us();
    let mut s = Session::open(settings, &a, attention)?;
    let mut rows = Vec::new();
    let mut p = Printer::of(&s.settings);
    match (tool.verb, tool.test) {
        (Verb::Send, Test::Bw) => send_bw(&mut s, &mut rows, &mut p)?,
        (_, Test::Bw) => one_sided_bw(&mut s, &mut rows, &mut p)?,
        (Verb::Write, Test::Lat) => write_lat(&mut s, &mut rows, &p)?,
        (Verb::Send, Test::Lat) => send_lat(&mut s, &mut rows, &p)?,
        (_, Test::Lat) => read_lat(&mut s, &mut rows, &p)?,
    }
    // What the fabric counted meanwhile: one line under the table, and the JSON's verdict.
    let verdict = s.watch.finish();
    for r in &verdict.reports {
        // With --output stdout is the numbers alone, for scripts.
        if p.full() {
            println!("{}", r.line());
        } else {
            eprintln!("{}", r.line());
        }
    }
    if let Some(path) = &s.settings.json_file {
        if !rows.is_empty() {
            let doc = json_document(&s.info().json(), &rows, &verdict.json());
            std::fs::write(path, doc + "\n")
                .map_err(|e| Error::config(format!("cannot write {path}: {e}")))?;
        }
    }
    if s.settings.wait_destroy > 0 {
        println!(
            " Waiting {} seconds before releasing resources...",
            s.settings.wait_destroy
        );
        // In short naps, so that a Ctrl-C ends the wait.
        let until =
            std::time::Instant::now() + std::time::Duration::from_secs(s.settings.wait_destroy);
        while std::time::Instant::now() < until && !attention.stop_requested() {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    if attention.stop_requested() {
        return Err(Error::Stopped(
            "stopped by a signal; the table holds what was measured".into(),
        ));
    }
    // perftest's passive write/read/atomic servers print the client's row but judge nothing.
    let st = &s.settings;
    if st.is_client || tool.verb == Verb::Send || st.duplex {
        p.check_limits(st)?;
    }
    Ok(())
}

fn bw_header(s: &Session, p: &Printer) {
    let st = &s.settings;
    // A passive server prints the client's row, which carries no CPU figure.
    let cpu = st.cpu_util && (st.is_client || st.tool.verb == Verb::Send || st.duplex);
    p.bw_header(if cpu { CPU_HEADER } else { "" });
}

fn report_of(r: &BwRow) -> BwReport {
    BwReport {
        size: r.size,
        iters: r.iters,
        bw_peak: r.peak,
        bw_avg: r.avg,
        msg_rate: r.msg_rate,
    }
}

/// A peer's report as a table row.
fn row_of(r: &BwReport) -> BwRow {
    BwRow {
        size: r.size,
        iters: r.iters,
        peak: r.bw_peak,
        avg: r.bw_avg,
        msg_rate: r.msg_rate,
        cpu: None,
    }
}

/// write-bw, read-bw, atomic-bw: the client posts, the server waits for its report.
fn one_sided_bw(s: &mut Session, rows: &mut Vec<JsonObject>, p: &mut Printer) -> Result<()> {
    s.exchange_keys()?;
    s.connect()?;
    s.print_addresses(false);
    s.exchange_keys()?;
    s.print_addresses(true);
    s.sync(Wait::Setup)?;
    bw_header(s, p);
    if s.settings.duplex {
        return duplex_bw(s, rows, p);
    }
    if !s.settings.is_client {
        // Passive: the client's WRs land in our memory; its report is what we print.
        s.sync(Wait::Test)?;
        let r = row_of(&s.channel.exchange_bw_report(&BwReport::default())?);
        p.bw(&r);
        print_named(&mut s.named);
        rows.push(bw_json(&r));
        let mine = s.my[0];
        s.channel.close(&mine, s.with_gid)?;
        p.decoration(RESULT_LINE);
        return Ok(());
    }
    let mut last = BwRow::default();
    // -W's counters, out of the session while post_side has it.
    let mut named = s.named.take();
    for size in s.settings.sizes.clone() {
        if s.settings.warm_up {
            warm_up(s, size)?;
        }
        let infinite = s.settings.infinite;
        let r = post_side(s, size, None, |r| {
            p.bw(r);
            print_named(&mut named);
        })?;
        if !infinite {
            p.bw(&r);
            print_named(&mut named);
        }
        rows.push(bw_json(&r));
        last = r;
        if s.attention.stop_requested() {
            break;
        }
    }
    s.named = named;
    p.decoration(RESULT_LINE);
    s.sync(Wait::Setup)?;
    s.channel.exchange_bw_report(&report_of(&last))?;
    let mine = s.my[0];
    s.channel.close(&mine, s.with_gid)
}

/// `-b`: both sides post (send-bw: and receive), meeting before each size (and after it in a
/// sweep), and each prints the sum of both directions, as perftest; a send-bw `-D` run prints
/// each side's own row instead, as perftest's.
fn duplex_bw(s: &mut Session, rows: &mut Vec<JsonObject>, p: &mut Printer) -> Result<()> {
    let sweep = s.settings.sizes.len() > 1;
    let send = s.settings.tool.verb == Verb::Send;
    if s.settings.infinite {
        // Each side prints its own direction per window until stopped (perftest prints its own
        // doubled, assuming the other is the same); stop both sides.
        let size = s.settings.sizes[0];
        s.sync(Wait::Test)?;
        let mut named = s.named.take();
        let last = post_side(s, size, None, |r| {
            p.bw(r);
            print_named(&mut named);
        })?;
        s.named = named;
        rows.push(bw_json(&last));
        p.decoration(RESULT_LINE);
        let mine = s.my[0];
        return s.channel.close(&mine, s.with_gid);
    }
    let mut rx = if send { Some(Receives::new(s)?) } else { None };
    for size in s.settings.sizes.clone() {
        if s.settings.warm_up {
            warm_up(s, size)?;
        }
        if let Some(r) = rx.as_mut() {
            r.begin_size(s)?;
        }
        s.sync(Wait::Test)?;
        let mine = post_side(s, size, rx.as_mut(), |_| {})?;
        // write_bw meets before it exchanges reports, send_bw after.
        if sweep && !send {
            s.sync(Wait::Test)?;
        }
        if send && s.settings.window().is_some() {
            p.bw(&mine);
            print_named(&mut s.named);
            rows.push(bw_json(&mine));
            continue;
        }
        let theirs = row_of(&s.channel.exchange_bw_report(&report_of(&mine))?);
        if sweep && send {
            s.sync(Wait::Test)?;
        }
        let both = BwRow {
            peak: mine.peak + theirs.peak,
            avg: mine.avg + theirs.avg,
            msg_rate: mine.msg_rate + theirs.msg_rate,
            ..mine
        };
        p.bw(&both);
        print_named(&mut s.named);
        rows.push(bw_json(&both));
        if s.settings.report_both && !sweep {
            // perftest prints these blocks whole, with --output too.
            let mut whole = Printer::of(&s.settings).with_tables();
            for (label, r) in [("Local", &mine), ("Remote", &theirs)] {
                println!("{RESULT_LINE}");
                println!("\n {label} results: ");
                bw_header(s, &whole);
                whole.bw(r);
            }
        }
        if s.attention.stop_requested() {
            break;
        }
    }
    p.decoration(RESULT_LINE);
    let mine = s.my[0];
    s.channel.close(&mine, s.with_gid)
}

/// The setup both SEND tools share: keys, connect, a handshake, keys again.
fn send_setup(s: &mut Session) -> Result<()> {
    s.exchange_keys()?;
    s.connect()?;
    s.print_addresses(false);
    s.sync(Wait::Setup)?;
    s.exchange_keys()?;
    s.print_addresses(true);
    Ok(())
}

/// send-bw: both sides run (the server counts its RECVs) and both print their own row; with
/// `--run_infinitely` both print a row per window.
fn send_bw(s: &mut Session, rows: &mut Vec<JsonObject>, p: &mut Printer) -> Result<()> {
    send_setup(s)?;
    bw_header(s, p);
    if s.settings.duplex {
        return duplex_bw(s, rows, p);
    }
    let sweep = s.settings.sizes.len() > 1;
    let infinite = s.settings.infinite;
    // -W's counters, out of the session while the loops have it.
    let mut named = s.named.take();
    let mut print = |r: &BwRow, named: &mut Option<Named>| {
        p.bw(r);
        print_named(named);
    };
    let mut rx = if s.settings.is_client {
        None
    } else {
        Some(Receives::new(s)?)
    };
    for size in s.settings.sizes.clone() {
        let r = match rx.as_mut() {
            None => {
                s.sync(Wait::Test)?;
                post_side(s, size, None, |r| print(r, &mut named))?
            }
            Some(rx) => {
                rx.begin_size(s)?;
                s.sync(Wait::Test)?;
                receive_side(s, size, rx, |r| print(r, &mut named))?
            }
        };
        if !infinite {
            print(&r, &mut named);
        }
        rows.push(bw_json(&r));
        if sweep {
            s.sync(Wait::Test)?;
        }
        if s.attention.stop_requested() {
            break;
        }
    }
    s.named = named;
    p.decoration(RESULT_LINE);
    let mine = s.my[0];
    s.channel.close(&mine, s.with_gid)
}

/// perftest's `-W` block after a result row: each named counter's change, then a blank line.
fn print_named(named: &mut Option<Named>) {
    if let Some(n) = named {
        for (name, by) in n.deltas() {
            println!("\t{name}={by}");
        }
        println!();
    }
}

fn lat_header(s: &Session, p: &Printer) {
    if !p.full() {
        return;
    }
    println!("{RESULT_LINE}");
    println!(
        "{}",
        match s.settings.length {
            Length::Iters(_) => LAT_HEADER.to_string(),
            Length::Duration { .. } if s.settings.cpu_util => {
                format!("{LAT_DURATION_HEADER}{CPU_HEADER}")
            }
            Length::Duration { .. } => LAT_DURATION_HEADER.to_string(),
        }
    );
}

/// The setup every latency tool shares but send-lat: an extra handshake first.
fn lat_setup(s: &mut Session) -> Result<()> {
    s.sync(Wait::Setup)?;
    s.exchange_keys()?;
    s.connect()?;
    s.print_addresses(false);
    s.exchange_keys()?;
    s.print_addresses(true);
    s.sync(Wait::Setup)
}

/// write-lat: both sides ping-pong and print; no closing exchange (perftest has none).
fn write_lat(s: &mut Session, rows: &mut Vec<JsonObject>, p: &Printer) -> Result<()> {
    lat_setup(s)?;
    lat_header(s, p);
    for size in s.settings.sizes.clone() {
        let run = write_ping_pong(s, size)?;
        lat_report(s, size, run, rows, p);
        if s.attention.stop_requested() {
            break;
        }
    }
    p.decoration(RESULT_LINE);
    Ok(())
}

/// read-lat, atomic-lat: the client measures; the server only waits for it to finish.
fn read_lat(s: &mut Session, rows: &mut Vec<JsonObject>, p: &Printer) -> Result<()> {
    lat_setup(s)?;
    let mine = s.my[0];
    if !s.settings.is_client {
        let with_gid = s.with_gid;
        // The closing handshake waits for the client's, after its whole run.
        s.channel.hand_shake(&mine, with_gid, Wait::Test)?;
        s.channel.close_after_handshake()?;
        p.decoration(RESULT_LINE);
        return Ok(());
    }
    lat_header(s, p);
    for size in s.settings.sizes.clone() {
        let run = read_round_trips(s, size)?;
        lat_report(s, size, run, rows, p);
        if s.attention.stop_requested() {
            break;
        }
    }
    s.channel.close(&mine, s.with_gid)?;
    p.decoration(RESULT_LINE);
    Ok(())
}

/// send-lat: both sides post their RECVs, meet, ping-pong (the client first) and print.
fn send_lat(s: &mut Session, rows: &mut Vec<JsonObject>, p: &Printer) -> Result<()> {
    send_setup(s)?;
    lat_header(s, p);
    for size in s.settings.sizes.clone() {
        let mut recv = send_receives(s, size)?;
        s.sync(Wait::Test)?;
        let run = send_ping_pong(s, size, &mut recv)?;
        lat_report(s, size, run, rows, p);
        if s.attention.stop_requested() {
            break;
        }
    }
    p.decoration(RESULT_LINE);
    let mine = s.my[0];
    s.channel.close(&mine, s.with_gid)
}

/// C's `%g` (six significant digits, no trailing zeros).
fn c_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let exp = v.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{v:.5e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Prints a latency row (and -U / -H samples) and keeps its JSON.
fn lat_report(s: &mut Session, size: u64, run: LatRun, rows: &mut Vec<JsonObject>, p: &Printer) {
    let st = &s.settings;
    let halve = matches!(st.tool.verb, Verb::Write | Verb::Send);
    let rtt = if halve { 2.0 } else { 1.0 };
    let tpu = clock::ticks_per_us();
    if let Length::Duration { .. } = st.length {
        // A run stopped before its window opened measured nothing: zeros, not NaN.
        let n = run.sampled.max(1);
        let us = run.window_ticks as f64 / tpu;
        let avg = us / rtt / n as f64;
        let tps = if us > 0.0 {
            run.sampled as f64 / (us / 1e6)
        } else {
            0.0
        };
        p.lat_duration(size, run.sampled, avg, tps, run.cpu);
        print_named(&mut s.named);
        rows.push(lat_duration_json(size, run.sampled, avg, tps, run.cpu));
        return;
    }
    let per_unit = if st.cycles { rtt } else { tpu * rtt };
    let unit = if st.cycles { "cycles" } else { "usec" };
    let mut deltas: Vec<u64> = run
        .posts
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    let iters = run.posts.len() as u64;
    if st.unsorted {
        println!("#, {unit}");
        for (i, d) in deltas.iter().enumerate() {
            println!("{}, {}", i + 1, c_g(*d as f64 / per_unit));
        }
    }
    let Some(stats) = LatencyStats::from_deltas(&mut deltas, per_unit) else {
        println!(" {size:<7} {iters}          (too few round trips for a latency table)");
        return;
    };
    if st.histogram {
        println!("#, {unit}");
        let kept = deltas.len().saturating_sub(super::stats::MEASURE_TAIL);
        for (i, d) in deltas[..kept].iter().enumerate() {
            println!("{}, {}", i + 1, c_g(*d as f64 / per_unit));
        }
    }
    if st.unsorted || st.histogram {
        lat_header(s, p);
    }
    p.lat(size, iters, &stats);
    print_named(&mut s.named);
    rows.push(lat_json(size, iters, &stats));
}

#[cfg(test)]
mod tests {
    use super::c_g;

    #[test]
    fn percent_g_as_c_prints_it() {
        assert_eq!(c_g(13.05), "13.05");
        assert_eq!(c_g(2.5), "2.5");
        assert_eq!(c_g(100.0), "100");
        assert_eq!(c_g(1234567.0), "1.23457e+06");
        assert_eq!(c_g(0.000012345), "1.2345e-05");
        assert_eq!(c_g(12.3456789), "12.3457");
    }
}
