//! An N×N heatmap as SVG (a fleet's pairwise bandwidth or latency, as mpiGraph draws them):
//! row = sender (client), column = receiver (server), each cell coloured from the worst to the
//! best value and labelled with its value; cells with no value are grey and say why in one word.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::draw::fmt_num;
use crate::error::{Error, Result};

/// What to draw.
#[derive(Debug, Clone)]
pub struct Heatmap {
    /// The line on top.
    pub title: String,
    /// The unit under the title ("MB/s", "µs").
    pub unit: String,
    /// Row and column labels (the hosts).
    pub labels: Vec<String>,
    /// `cells[row][col]`: a value, or the word to write in its place ("—" on the diagonal).
    pub cells: Vec<Vec<std::result::Result<f64, String>>>,
    /// True when a smaller value is better (latency): the colour scale turns around.
    pub lower_is_better: bool,
}

const CELL: i32 = 90;
const MARGIN_LEFT: i32 = 170;
const MARGIN_TOP: i32 = 110;
const FONT: &str = "sans-serif";

/// Red (worst) through yellow to green (best), for `t` in 0..=1.
fn scale(t: f64) -> RGBColor {
    let t = t.clamp(0.0, 1.0);
    let (r, g) = if t < 0.5 {
        (230.0, 80.0 + 2.0 * t * 150.0)
    } else {
        (230.0 - (t - 0.5) * 2.0 * 150.0, 230.0)
    };
    RGBColor(r as u8, g as u8, 90)
}

/// Draws `h` as an SVG document.
pub fn svg(h: &Heatmap) -> Result<String> {
    let n = h.labels.len() as i32;
    let (w, ht) = (MARGIN_LEFT + n * CELL + 30, MARGIN_TOP + n * CELL + 30);
    let values: Vec<f64> = h
        .cells
        .iter()
        .flatten()
        .filter_map(|c| c.as_ref().ok().copied())
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (w as u32, ht as u32)).into_drawing_area();
        let fail =
            |e: &dyn std::fmt::Display| Error::config(format!("drawing the heatmap failed: {e}"));
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let text = |s: &str, x: i32, y: i32, size: i32, pos: Pos| {
            root.draw(&Text::new(
                s.to_string(),
                (x, y),
                (FONT, size).into_font().color(&BLACK).pos(pos),
            ))
        };
        let left = Pos::new(HPos::Left, VPos::Center);
        let centre = Pos::new(HPos::Center, VPos::Center);
        let right = Pos::new(HPos::Right, VPos::Center);
        text(&h.title, 20, 25, 20, left).map_err(|e| fail(&e))?;
        text(
            &format!(
                "{} (rows: sender, columns: receiver; green is best)",
                h.unit
            ),
            20,
            50,
            14,
            left,
        )
        .map_err(|e| fail(&e))?;
        for (i, label) in h.labels.iter().enumerate() {
            let i = i as i32;
            text(
                label,
                MARGIN_LEFT - 10,
                MARGIN_TOP + i * CELL + CELL / 2,
                14,
                right,
            )
            .map_err(|e| fail(&e))?;
            text(
                label,
                MARGIN_LEFT + i * CELL + CELL / 2,
                MARGIN_TOP - 15,
                14,
                centre,
            )
            .map_err(|e| fail(&e))?;
        }
        for (r, row) in h.cells.iter().enumerate() {
            for (c, cell) in row.iter().enumerate() {
                let (x, y) = (MARGIN_LEFT + c as i32 * CELL, MARGIN_TOP + r as i32 * CELL);
                let (fill, label) = match cell {
                    Ok(v) => {
                        let t = if hi > lo { (v - lo) / (hi - lo) } else { 1.0 };
                        let t = if h.lower_is_better { 1.0 - t } else { t };
                        (scale(t), fmt_num(*v))
                    }
                    Err(word) => (RGBColor(210, 210, 210), word.clone()),
                };
                root.draw(&Rectangle::new(
                    [(x, y), (x + CELL - 2, y + CELL - 2)],
                    fill.filled(),
                ))
                .map_err(|e| fail(&e))?;
                text(&label, x + CELL / 2, y + CELL / 2, 13, centre).map_err(|e| fail(&e))?;
            }
        }
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_three_host_heatmap_has_a_cell_per_pair_and_its_labels() {
        let h = Heatmap {
            title: "write-bw".into(),
            unit: "MB/s".into(),
            labels: vec!["n0".into(), "n1".into(), "n2".into()],
            cells: vec![
                vec![Err("—".into()), Ok(3000.0), Ok(1000.0)],
                vec![Ok(2990.0), Err("—".into()), Ok(1010.0)],
                vec![Ok(1005.0), Err("failed".into()), Err("—".into())],
            ],
            lower_is_better: false,
        };
        let s = svg(&h).unwrap();
        assert!(s.starts_with("<svg"), "{s}");
        // The background and nine cells.
        assert_eq!(s.matches("<rect").count(), 10, "{s}");
        for word in ["n0", "n1", "n2", "3000", "1010", "failed", "write-bw"] {
            assert!(s.contains(word), "{word} missing");
        }
    }
}
