//! Draws a horizontal bar chart as SVG: one row per target, one panel per
//! setting side by side on a shared value axis, 95 % whiskers, and each
//! bound drawn as what it is (a dashed, open bar ending in an arrow and
//! its "≥" or "<" figure), never as a measured value. Exact figures are
//! in each row's `<title>` tooltip, as on the line charts.

use std::fmt::Write as _;

use super::axis::{axis_tick, Axis};
use super::plot::{text_width, x_tick, PALETTE};
use super::table::esc;

/// Whether a bar is a value or a bound, and which way the bound points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A measured value.
    Value,
    /// At least this much: the arrow points up the axis.
    AtLeast,
    /// Less than this: the arrow points down the axis.
    Below,
}

#[derive(Debug, Clone)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    /// The 95 % interval, when there were rounds to compute one.
    pub ci: Option<(f64, f64)>,
    pub bound: Bound,
    /// Palette index: the target's colour on every chart of the page.
    pub color: usize,
    /// The figure printed past the bar's end.
    pub text: String,
    pub tip: String,
}

#[derive(Debug, Clone)]
pub struct BarPanel {
    pub title: String,
    pub bars: Vec<Bar>,
}

#[derive(Debug, Clone)]
pub struct BarSpec {
    pub title: String,
    pub x_label: String,
    pub log: bool,
    pub panels: Vec<BarPanel>,
}

const TITLE_PX: f64 = 17.0;
const TEXT_PX: f64 = 12.0;
const ROW_H: f64 = 24.0;
const BAR_H: f64 = 14.0;
const PLOT_W: f64 = 300.0;
const GAP: f64 = 30.0;
const MARGIN: f64 = 18.0;
const TOP: f64 = 40.0;
const PANEL_HEAD: f64 = 24.0;
const AXIS_FOOT: f64 = 44.0;
const ARROW: f64 = 7.0;

fn bars(spec: &BarSpec) -> impl Iterator<Item = &Bar> {
    spec.panels.iter().flat_map(|p| p.bars.iter())
}

/// The sentence under the chart saying what whiskers and dashed bars are,
/// when it has any.
fn note(spec: &BarSpec) -> String {
    let mut parts = Vec::new();
    if bars(spec).any(|b| b.ci.is_some()) {
        parts.push("whiskers: 95 % interval over rounds");
    }
    if bars(spec).any(|b| b.bound != Bound::Value) {
        parts.push("dashed bars with an arrow: bounds, not measured values");
    }
    parts.join("; ")
}

/// The value axis over every bar and interval end: from zero when linear.
fn axis(spec: &BarSpec) -> Axis {
    let values: Vec<f64> = bars(spec).map(|b| b.value).collect();
    let ends: Vec<f64> = bars(spec)
        .filter_map(|b| b.ci)
        .flat_map(|(lo, hi)| [lo, hi])
        .collect();
    Axis::y(&values, &ends, spec.log)
}

/// The chart as an SVG document.
pub fn svg(spec: &BarSpec) -> String {
    let ax = axis(spec);
    let label_w = bars(spec)
        .map(|b| text_width(&b.label, TEXT_PX))
        .fold(40.0, f64::max)
        + 8.0;
    let text_w = bars(spec)
        .map(|b| text_width(&b.text, TEXT_PX))
        .fold(0.0, f64::max)
        + 2.0 * ARROW
        + 6.0;
    let panel_w = label_w + PLOT_W + text_w;
    let rows = spec.panels.iter().map(|p| p.bars.len()).max().unwrap_or(0);
    let n = spec.panels.len().max(1);
    let note = note(spec);
    let width = (2.0 * MARGIN + n as f64 * panel_w + (n - 1) as f64 * GAP)
        .max(text_width(&spec.title, TITLE_PX) + 2.0 * MARGIN)
        .max(text_width(&note, TEXT_PX) + 2.0 * MARGIN)
        .ceil();
    let plot_h = rows as f64 * ROW_H;
    let height = (TOP + PANEL_HEAD + plot_h + AXIS_FOOT + 22.0).ceil();
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n\
         <text x=\"{MARGIN}\" y=\"24\" font-size=\"{TITLE_PX}\" font-weight=\"bold\">{}</text>\n",
        esc(&spec.title)
    );
    for (i, p) in spec.panels.iter().enumerate() {
        let left = MARGIN + i as f64 * (panel_w + GAP);
        panel(&mut o, p, &ax, left + label_w, TOP + PANEL_HEAD, plot_h);
        let _ = writeln!(
            o,
            "<text x=\"{left}\" y=\"{}\" font-size=\"13\" font-weight=\"bold\">{}</text>",
            TOP + 14.0,
            esc(&p.title)
        );
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" font-size=\"{TEXT_PX}\" text-anchor=\"middle\">{}</text>",
            left + label_w + PLOT_W / 2.0,
            TOP + PANEL_HEAD + plot_h + 36.0,
            esc(&spec.x_label)
        );
    }
    if !note.is_empty() {
        let _ = writeln!(
            o,
            "<text x=\"{MARGIN}\" y=\"{}\" font-size=\"{TEXT_PX}\" fill=\"#555\">{}</text>",
            height - 8.0,
            esc(&note)
        );
    }
    o.push_str("</svg>\n");
    o
}

/// One panel: ticks and grid, then a row per bar.
fn panel(o: &mut String, p: &BarPanel, ax: &Axis, x0: f64, y0: f64, h: f64) {
    let x = |v: f64| x0 + ax.frac(v).clamp(0.0, 1.0) * PLOT_W;
    for &t in &ax.ticks {
        x_tick(o, x(t), y0, y0 + h, &axis_tick(t));
    }
    let _ = writeln!(
        o,
        "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{}\" stroke=\"#333\"/>",
        y0 + h
    );
    for (row, b) in p.bars.iter().enumerate() {
        let mid = y0 + row as f64 * ROW_H + ROW_H / 2.0;
        bar(o, b, &x, x0, mid);
    }
}

/// One row: its label, the bar (solid for a value, dashed and open with
/// an arrow for a bound), the whisker, the figure, the tooltip.
fn bar(o: &mut String, b: &Bar, x: &dyn Fn(f64) -> f64, x0: f64, mid: f64) {
    let color = PALETTE[b.color % PALETTE.len()];
    let end = x(b.value);
    let top = mid - BAR_H / 2.0;
    let _ = writeln!(o, "<g><title>{}</title>", esc(&b.tip));
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{TEXT_PX}\" text-anchor=\"end\">{}</text>",
        x0 - 6.0,
        mid + 4.0,
        esc(&b.label)
    );
    let style = match b.bound {
        Bound::Value => format!("fill=\"{color}\""),
        _ => format!(
            "fill=\"{color}\" fill-opacity=\"0.2\" stroke=\"{color}\" stroke-dasharray=\"4 3\""
        ),
    };
    let _ = writeln!(
        o,
        "<rect x=\"{x0:.1}\" y=\"{top:.1}\" width=\"{:.1}\" height=\"{BAR_H}\" {style}/>",
        (end - x0).max(1.0)
    );
    let mut text_x = end + 5.0;
    match b.bound {
        Bound::Value => {}
        Bound::AtLeast => {
            arrow(o, color, end, mid, 1.0);
            text_x += ARROW;
        }
        Bound::Below => {
            arrow(o, color, end, mid, -1.0);
        }
    }
    if let Some((lo, hi)) = b.ci {
        let (l, h) = (x(lo), x(hi));
        let _ = writeln!(
            o,
            "<path d=\"M{l:.1} {mid:.1}H{h:.1}M{l:.1} {:.1}V{:.1}M{h:.1} {:.1}V{:.1}\" stroke=\"#222\" fill=\"none\"/>",
            mid - 4.0,
            mid + 4.0,
            mid - 4.0,
            mid + 4.0
        );
        text_x = text_x.max(h + 5.0);
    }
    let _ = writeln!(
        o,
        "<text x=\"{text_x:.1}\" y=\"{:.1}\" font-size=\"{TEXT_PX}\">{}</text>\n</g>",
        mid + 4.0,
        esc(&b.text)
    );
}

/// A filled triangle at `at` pointing along the axis (`dir` 1.0 up the
/// values, -1.0 down them).
fn arrow(o: &mut String, color: &str, at: f64, mid: f64, dir: f64) {
    let tip = at + dir * ARROW;
    let _ = writeln!(
        o,
        "<path d=\"M{at:.1} {:.1}L{tip:.1} {mid:.1}L{at:.1} {:.1}Z\" fill=\"{color}\"/>",
        mid - 6.0,
        mid + 6.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(label: &str, value: f64, bound: Bound, ci: Option<(f64, f64)>) -> Bar {
        Bar {
            label: label.into(),
            value,
            ci,
            bound,
            color: 0,
            text: format!("{value}"),
            tip: format!("{label}: {value}"),
        }
    }

    #[test]
    fn bounds_are_dashed_with_an_arrow_and_values_are_solid_with_whiskers() {
        let spec = BarSpec {
            title: "capacity".into(),
            x_label: "requests/s".into(),
            log: true,
            panels: vec![BarPanel {
                title: "keep-alive on".into(),
                bars: vec![
                    b("fast", 64000.0, Bound::AtLeast, None),
                    b("mid", 9000.0, Bound::Value, Some((8500.0, 9500.0))),
                    b("slow", 1000.0, Bound::Below, None),
                ],
            }],
        };
        let svg = svg(&spec);
        assert_eq!(svg.matches("stroke-dasharray=\"4 3\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("Z\" fill=").count(), 2, "{svg}");
        assert!(svg.contains("<title>mid: 9000</title>"), "{svg}");
        assert!(svg.contains("whiskers: 95 % interval over rounds; dashed bars with an arrow: bounds, not measured values"));
        // The whisker's ends sit either side of the bar's end.
        assert_eq!(svg.matches("stroke=\"#222\" fill=\"none\"").count(), 1);
    }
}
