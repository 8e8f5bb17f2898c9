//! Drawing a resolved [`Chart`] as SVG with plotters: lines with point markers and error bars
//! (plotters' `ErrorBar`), or horizontal bars. A log2 x axis is drawn on log2(x) with labels
//! 2^k written as sizes (32, 1K, 64K, 1M), so its ticks are exactly the powers of two.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::chart::{Bars, Chart, Lines};
use crate::error::{Error, Result};

/// Series colours (Tableau 10), cycled past ten series.
pub const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

/// What marks a questionable point or bar: its run's counters moved.
const QUESTIONABLE_MARK: &str = "?";
/// The legend entry that explains the mark.
const QUESTIONABLE_LEGEND: &str =
    "? questionable: the fabric's counters moved (retransmissions, RNR, link)";

const FONT: &str = "sans-serif";

/// Series `i`'s colour.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn fail(e: impl std::fmt::Display) -> Error {
    Error::config(format!("drawing the chart failed: {e}"))
}

/// A linear f64 axis whose labelled ticks are exactly the given values (plotters' own
/// `with_key_points` gives up its value formatting, which the mesh needs).
struct Axis {
    range: Range<f64>,
    ticks: Vec<f64>,
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let frac = if span > 0.0 {
            (v - self.range.start) / span
        } else {
            0.5
        };
        limit.0 + (f64::from(limit.1 - limit.0) * frac).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        let step = self
            .ticks
            .len()
            .div_ceil(hint.max_num_points().max(1))
            .max(1);
        self.ticks.iter().copied().step_by(step).collect()
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// Draws the chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String> {
    let mut out = String::new();
    match chart {
        Chart::Lines(l) => lines(l, &mut out)?,
        Chart::Bars(b) => bars(b, &mut out)?,
    }
    Ok(out)
}

/// A number in few characters: 0.052, 1.5, 12, 3.4e6.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 {
        "0".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{v:.1e}")
    } else {
        let digits = (3 - a.log10().floor() as i32).clamp(0, 4) as usize;
        let s = format!("{v:.digits$}");
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
}

/// A power of two as a size: 32, 1K, 64K, 1M, 1G.
pub fn fmt_size(v: f64) -> String {
    let v = v.round() as u64;
    for (shift, unit) in [(30, "G"), (20, "M"), (10, "K")] {
        if v >= 1 << shift && v.is_multiple_of(1 << shift) {
            return format!("{}{unit}", v >> shift);
        }
    }
    v.to_string()
}

/// Ticks for a linear axis over [lo, hi]: the data's x values when few, else round steps.
fn linear_ticks(xs: &[f64], lo: f64, hi: f64) -> Vec<f64> {
    let mut d: Vec<f64> = xs.to_vec();
    d.sort_by(f64::total_cmp);
    d.dedup();
    if d.len() <= 16 {
        return d;
    }
    let raw = (hi - lo) / 8.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while t <= hi + step * 1e-9 {
        out.push(t);
        t += step;
    }
    out
}

fn lines(l: &Lines, out: &mut String) -> Result<()> {
    let tx = |x: f64| if l.log_x { x.log2() } else { x };
    let xs: Vec<f64> = l
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| tx(p.x)))
        .collect();
    let (mut x0, mut x1) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    let ticks = if l.log_x {
        let (a, b) = (x0.floor() as i64, x1.ceil() as i64);
        let step = ((b - a) / 12 + 1).max(1);
        (a..=b).step_by(step as usize).map(|k| k as f64).collect()
    } else {
        linear_ticks(&xs, x0, x1)
    };
    let pad = if x1 > x0 { (x1 - x0) * 0.05 } else { 1.0 };
    (x0, x1) = (x0 - pad, x1 + pad);
    let y1 = l
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.err.map_or(p.y, |(_, hi)| hi.max(p.y)))
        .fold(0.0f64, f64::max);
    let y1 = if y1 > 0.0 { y1 * 1.12 } else { 1.0 };

    let root = SVGBackend::with_string(out, (1000, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&l.title, (FONT, 22))
        .margin(16)
        .x_label_area_size(52)
        .y_label_area_size(76)
        .build_cartesian_2d(
            Axis {
                range: x0..x1,
                ticks,
            },
            0.0..y1,
        )
        .map_err(fail)?;
    let xfmt = |v: &f64| {
        if l.log_x {
            fmt_size(v.exp2())
        } else {
            fmt_num(*v)
        }
    };
    chart
        .configure_mesh()
        .x_desc(&l.x_label)
        .y_desc(&l.y_label)
        .x_labels(12)
        .x_label_formatter(&xfmt)
        .y_label_formatter(&|v| fmt_num(*v))
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .light_line_style(WHITE)
        .draw()
        .map_err(fail)?;
    for (i, s) in l.series.iter().enumerate() {
        let c = color(i);
        let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (tx(p.x), p.y)).collect();
        chart
            .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
            .map_err(fail)?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
            .map_err(fail)?;
        // A questionable point (its counters moved) gets a ring and a `?`.
        let marked = || s.points.iter().filter(|p| p.questionable);
        chart
            .draw_series(marked().map(|p| Circle::new((tx(p.x), p.y), 7, c.stroke_width(2))))
            .map_err(fail)?;
        let mark_style = TextStyle::from((FONT, 13)).pos(Pos::new(HPos::Left, VPos::Bottom));
        chart
            .draw_series(
                marked().map(|p| Text::new(QUESTIONABLE_MARK, (tx(p.x), p.y), mark_style.clone())),
            )
            .map_err(fail)?;
        let bars = s.points.iter().filter_map(|p| {
            p.err
                .map(|(lo, hi)| ErrorBar::new_vertical(tx(p.x), lo, p.y, hi, c.stroke_width(1), 8))
        });
        chart.draw_series(bars).map_err(fail)?;
    }
    if l.series
        .iter()
        .flat_map(|s| &s.points)
        .any(|p| p.questionable)
    {
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(fail)?
            .label(QUESTIONABLE_LEGEND)
            .legend(|(x, y)| Circle::new((x + 11, y), 6, BLACK.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 13))
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)
}

fn bars(b: &Bars, out: &mut String) -> Result<()> {
    let n = b.rows.len();
    let k = b.series.len().max(1);
    let row_px = (14 * k + 10).max(24) as u32;
    let height = 140 + row_px * n as u32;
    let longest = b.rows.iter().map(|r| r.chars().count()).max().unwrap_or(4);
    let label_px = (longest as u32 * 7 + 20).clamp(80, 420);
    let x1 = b
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten())
        .fold(0.0f64, |a, &v| a.max(v));
    // Room on the right for the value labels and the legend.
    let x1 = if x1 > 0.0 { x1 * 1.35 } else { 1.0 };
    let centers: Vec<f64> = (0..n).map(|i| i as f64 + 0.5).collect();

    let root = SVGBackend::with_string(out, (1000, height)).into_drawing_area();
    root.fill(&WHITE).map_err(fail)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&b.title, (FONT, 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(label_px)
        .build_cartesian_2d(
            0.0..x1,
            Axis {
                range: 0.0..n as f64,
                ticks: centers,
            },
        )
        .map_err(fail)?;
    // Row i (0 = first) is drawn at the top: y from n-i-1 to n-i.
    let row_of = |y: f64| n.checked_sub(1 + y.floor().max(0.0) as usize);
    let yfmt = |y: &f64| row_of(*y).map(|i| b.rows[i].clone()).unwrap_or_default();
    chart
        .configure_mesh()
        .x_desc("Mops")
        // Every row is named (the mesh otherwise thins labels to about ten).
        .y_labels(n)
        .y_label_formatter(&yfmt)
        .x_label_formatter(&|v| fmt_num(*v))
        .axis_desc_style((FONT, 16))
        .label_style((FONT, 13))
        .disable_y_mesh()
        .light_line_style(WHITE)
        .draw()
        .map_err(fail)?;
    let band = 0.8 / k as f64;
    let value_style = TextStyle::from((FONT, 11)).pos(Pos::new(HPos::Left, VPos::Center));
    for (j, (label, values)) in b.series.iter().enumerate() {
        let c = color(j);
        let questionable = |i: usize| b.questionable.get(j).and_then(|q| q.get(i)) == Some(&true);
        let rect = |(i, v): (usize, &Option<f64>)| {
            let top = (n - i) as f64 - 0.1 - band * j as f64;
            v.map(|v| (v, top - band, top))
        };
        let spans: Vec<(f64, f64, f64)> = values.iter().enumerate().filter_map(rect).collect();
        let marks: Vec<&str> = (0..values.len())
            .filter(|&i| values[i].is_some())
            .map(|i| {
                if questionable(i) {
                    QUESTIONABLE_MARK
                } else {
                    ""
                }
            })
            .collect();
        chart
            .draw_series(
                spans
                    .iter()
                    .map(|&(v, y0, y1)| Rectangle::new([(0.0, y0), (v, y1)], c.filled())),
            )
            .map_err(fail)?
            .label(label.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        chart
            .draw_series(spans.iter().zip(&marks).map(|(&(v, y0, y1), mark)| {
                Text::new(
                    format!("\u{a0}{}{mark}", fmt_num(v)),
                    (v, (y0 + y1) / 2.0),
                    value_style.clone(),
                )
            }))
            .map_err(fail)?;
    }
    if b.questionable.iter().flatten().any(|&q| q) {
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
            .map_err(fail)?
            .label(QUESTIONABLE_LEGEND)
            .legend(|(x, y)| Text::new(QUESTIONABLE_MARK, (x, y - 7), (FONT, 14)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 13))
        .draw()
        .map_err(fail)?;
    root.present().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_numbers_are_short() {
        let sizes: Vec<String> = [32.0, 1024.0, 65536.0, 1048576.0, 3.0 * 1024.0, 1536.0]
            .into_iter()
            .map(fmt_size)
            .collect();
        assert_eq!(sizes, ["32", "1K", "64K", "1M", "3K", "1536"]);
        let nums: Vec<String> = [0.0, 0.05, 1.5, 12.0, 1234.56, 3.4e6, 2e-5]
            .into_iter()
            .map(fmt_num)
            .collect();
        assert_eq!(nums, ["0", "0.05", "1.5", "12", "1235", "3.4e6", "2.0e-5"]);
    }

    #[test]
    fn linear_ticks_are_the_data_when_few_else_round_steps() {
        assert_eq!(
            linear_ticks(&[8.0, 1.0, 2.0, 4.0, 2.0], 1.0, 8.0),
            [1.0, 2.0, 4.0, 8.0]
        );
        let many: Vec<f64> = (1..=40).map(f64::from).collect();
        assert_eq!(
            linear_ticks(&many, 1.0, 40.0),
            [5.0, 10.0, 15.0, 20.0, 25.0, 30.0, 35.0, 40.0]
        );
    }
}
