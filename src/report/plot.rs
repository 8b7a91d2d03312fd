//! Draws one chart as SVG text: small multiples (panels in a grid that
//! share both axes), lines that join only good points, 95 % error bars,
//! hollow markers for cells with failed or non-2xx answers, and every
//! marker's exact value as an SVG `<title>` tooltip. Written by hand
//! rather than with plotters because plotters cannot give a marker a
//! `<title>` child, and the tooltips are how a reader gets exact numbers
//! without JavaScript. Text uses the generic `sans-serif` family, so no
//! font file is needed; widths are estimated to size the legend so that
//! no label is ever cut.

use std::fmt::Write as _;

use super::axis::{axis_tick, Axis};
use super::table::esc;

/// One measured (or failed) cell.
#[derive(Debug, Clone)]
pub struct Point {
    pub x: f64,
    /// `None`: the cell has no value (every run failed); drawn as a hollow
    /// marker on the x axis.
    pub y: Option<f64>,
    /// The 95 % interval, when there were repeats to compute one.
    pub ci: Option<(f64, f64)>,
    /// False when the cell had failed or non-2xx answers: hollow marker,
    /// no line through it.
    pub ok: bool,
    /// The tooltip: the exact figures behind the marker.
    pub tip: String,
}

/// One line: a palette index (the target's fixed colour) and a variant
/// (dash pattern and marker shape) telling apart lines of one target.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: usize,
    pub variant: usize,
    pub points: Vec<Point>,
}

/// One small multiple.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone)]
pub struct ChartSpec {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    /// x takes whole numbers only (concurrency, workers): no tick at 0.5.
    pub integer_x: bool,
    /// Panels per row; further panels wrap to the next row.
    pub columns: usize,
    pub panels: Vec<Panel>,
}

/// Tableau 10: distinct on screen and in greyscale print.
pub const PALETTE: [&str; 10] = [
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];
/// Dash patterns by variant: solid, dashed, dotted, dash-dot.
const DASHES: [&str; 4] = ["", "7 4", "2 3", "9 3 2 3"];

const TITLE_PX: f64 = 17.0;
const LABEL_PX: f64 = 14.0;
const TICK_PX: f64 = 12.0;
const LEGEND_PX: f64 = 13.0;
const PANEL_W: f64 = 330.0;
const PANEL_H: f64 = 250.0;
const GAP: f64 = 26.0;
const LEFT: f64 = 78.0;
const RIGHT: f64 = 18.0;
const TOP: f64 = 40.0;
/// Room above each panel for its title.
const PANEL_HEAD: f64 = 22.0;
/// Room below each panel for tick labels (and the axis label on the last row).
const PANEL_FOOT: f64 = 30.0;
const LEGEND_ROW: f64 = 20.0;
const SAMPLE_W: f64 = 34.0;

/// A generous estimate of how wide `s` renders in a sans-serif font of
/// `px` pixels: 0.62 em per character is above the average of common
/// sans-serif faces (about 0.55), so a box sized by it holds the text.
pub fn text_width(s: &str, px: f64) -> f64 {
    s.chars().count() as f64 * px * 0.62
}

fn points(spec: &ChartSpec) -> impl Iterator<Item = &Point> {
    spec.panels
        .iter()
        .flat_map(|p| p.series.iter())
        .flat_map(|s| s.points.iter())
}

/// The legend's entries: one per distinct line across the panels, in
/// order of first appearance.
fn legend_entries(spec: &ChartSpec) -> Vec<(&str, usize, usize)> {
    let mut out: Vec<(&str, usize, usize)> = Vec::new();
    for s in spec.panels.iter().flat_map(|p| p.series.iter()) {
        let e = (s.label.as_str(), s.color, s.variant);
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

/// The sentence under the legend saying what bars and hollow markers are,
/// when the chart has any.
fn legend_note(spec: &ChartSpec) -> String {
    let mut parts = Vec::new();
    if points(spec).any(|p| p.ci.is_some()) {
        parts.push("bars: 95 % confidence interval over repeats");
    }
    if points(spec).any(|p| !p.ok) {
        parts.push("hollow markers: cells with failed or non-2xx answers (no line joins them)");
    }
    parts.join("; ")
}

/// Geometry fixed by the panels and the legend.
struct Layout {
    width: f64,
    height: f64,
    cols: usize,
    legend_top: f64,
    legend_cols: usize,
    legend_col_w: f64,
}

fn layout(spec: &ChartSpec) -> Layout {
    let n = spec.panels.len().max(1);
    let cols = spec.columns.clamp(1, n);
    let rows = n.div_ceil(cols);
    let plots_w = LEFT + cols as f64 * PANEL_W + (cols - 1) as f64 * GAP + RIGHT;
    let entries = legend_entries(spec);
    let item_w = entries
        .iter()
        .map(|(l, _, _)| SAMPLE_W + 10.0 + text_width(l, LEGEND_PX) + 22.0)
        .fold(0.0, f64::max);
    let note_w = text_width(&legend_note(spec), LEGEND_PX - 1.0) + 2.0 * RIGHT;
    let title_w = text_width(&spec.title, TITLE_PX) + 2.0 * RIGHT;
    // The chart widens rather than cut a label.
    let width = plots_w
        .max(item_w + 2.0 * RIGHT)
        .max(note_w)
        .max(title_w)
        .ceil();
    let legend_cols = (((width - 2.0 * RIGHT) / item_w.max(1.0)).floor() as usize).max(1);
    let legend_rows = entries.len().div_ceil(legend_cols);
    let legend_top = TOP + rows as f64 * (PANEL_HEAD + PANEL_H + PANEL_FOOT) + 26.0;
    let note_h = if legend_note(spec).is_empty() {
        0.0
    } else {
        LEGEND_ROW
    };
    Layout {
        width,
        height: (legend_top + legend_rows as f64 * LEGEND_ROW + note_h + 8.0).ceil(),
        cols,
        legend_top,
        legend_cols,
        legend_col_w: item_w,
    }
}

/// A tick of a value axis across the bottom: its grid line from `top`
/// to `bottom` and its label below.
pub fn x_tick(o: &mut String, x: f64, top: f64, bottom: f64, label: &str) {
    let _ = writeln!(
        o,
        "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"#e4e4e4\"/>\n\
         <text x=\"{x:.1}\" y=\"{}\" font-size=\"{TICK_PX}\" text-anchor=\"middle\">{label}</text>",
        bottom + 16.0
    );
}

/// The chart as an SVG document.
pub fn svg(spec: &ChartSpec) -> String {
    let l = layout(spec);
    let xs: Vec<f64> = points(spec).map(|p| p.x).collect();
    let ys: Vec<f64> = points(spec).filter_map(|p| p.y).collect();
    let extents: Vec<f64> = points(spec)
        .filter_map(|p| p.ci)
        .flat_map(|(a, b)| [a, b])
        .collect();
    let xa = Axis::x(&xs, spec.log_x, spec.integer_x);
    let ya = Axis::y(&ys, &extents, spec.log_y);
    let mut o = String::new();
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
         viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\">\n<title>{t}</title>\n\
         <rect width=\"{w}\" height=\"{h}\" fill=\"#fff\"/>\n\
         <text x=\"{cx}\" y=\"24\" font-size=\"{TITLE_PX}\" text-anchor=\"middle\">{t}</text>\n",
        w = l.width,
        h = l.height,
        t = esc(&spec.title),
        cx = l.width / 2.0,
    );
    let rows = spec.panels.len().max(1).div_ceil(l.cols);
    for (i, panel) in spec.panels.iter().enumerate() {
        let (r, c) = (i / l.cols, i % l.cols);
        let x0 = LEFT + c as f64 * (PANEL_W + GAP);
        let y0 = TOP + r as f64 * (PANEL_HEAD + PANEL_H + PANEL_FOOT) + PANEL_HEAD;
        let frame = Frame {
            x0,
            y0,
            xa: &xa,
            ya: &ya,
        };
        draw_panel(&mut o, spec, panel, &frame, c == 0);
    }
    // Axis labels: y once, beside the first column; x once, under the grid.
    let grid_mid_y = TOP + rows as f64 * (PANEL_HEAD + PANEL_H + PANEL_FOOT) / 2.0;
    let _ = writeln!(
        o,
        "<text x=\"16\" y=\"{y}\" font-size=\"{LABEL_PX}\" text-anchor=\"middle\" \
         transform=\"rotate(-90 16 {y})\">{}</text>",
        esc(&spec.y_label),
        y = grid_mid_y
    );
    let grid_w = l.cols as f64 * PANEL_W + (l.cols - 1) as f64 * GAP;
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" font-size=\"{LABEL_PX}\" text-anchor=\"middle\">{}</text>",
        LEFT + grid_w / 2.0,
        l.legend_top - 6.0,
        esc(&spec.x_label)
    );
    draw_legend(&mut o, spec, &l);
    o.push_str("</svg>\n");
    o
}

/// Where a panel sits and the axes it shares.
struct Frame<'a> {
    x0: f64,
    y0: f64,
    xa: &'a Axis,
    ya: &'a Axis,
}

impl Frame<'_> {
    fn px(&self, x: f64) -> f64 {
        self.x0 + self.xa.frac(x) * PANEL_W
    }
    fn py(&self, y: f64) -> f64 {
        self.y0 + PANEL_H - self.ya.frac(y).clamp(0.0, 1.0) * PANEL_H
    }
}

fn draw_panel(o: &mut String, spec: &ChartSpec, p: &Panel, f: &Frame, first_col: bool) {
    let (x0, y0) = (f.x0, f.y0);
    let _ = writeln!(
        o,
        "<g class=\"panel\">\n<text x=\"{}\" y=\"{}\" font-size=\"{LABEL_PX}\" \
         text-anchor=\"middle\" font-weight=\"bold\">{}</text>",
        x0 + PANEL_W / 2.0,
        y0 - 7.0,
        esc(&p.title)
    );
    let _ = writeln!(
        o,
        "<rect x=\"{x0}\" y=\"{y0}\" width=\"{PANEL_W}\" height=\"{PANEL_H}\" fill=\"none\" stroke=\"#999\"/>"
    );
    for &t in &f.ya.ticks {
        let y = f.py(t);
        let _ = writeln!(
            o,
            "<line x1=\"{x0}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#e4e4e4\"/>",
            x0 + PANEL_W
        );
        if first_col {
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{:.1}\" font-size=\"{TICK_PX}\" text-anchor=\"end\">{}</text>",
                x0 - 6.0,
                y + 4.0,
                axis_tick(t)
            );
        }
    }
    // A label too close to the one before it is left out (ticks 1 and 2
    // on a log axis of four decades would overlap).
    let mut last_label = f64::NEG_INFINITY;
    for &t in &f.xa.ticks {
        if spec.integer_x && t.fract() != 0.0 {
            continue;
        }
        let x = f.px(t);
        if x - last_label < 28.0 {
            continue;
        }
        last_label = x;
        x_tick(o, x, y0, y0 + PANEL_H, &axis_tick(t));
    }
    for s in &p.series {
        draw_series(o, s, f);
    }
    o.push_str("</g>\n");
}

fn draw_series(o: &mut String, s: &Series, f: &Frame) {
    let color = PALETTE[s.color % PALETTE.len()];
    let dash = DASHES[s.variant % DASHES.len()];
    let dash_attr = if dash.is_empty() {
        String::new()
    } else {
        format!(" stroke-dasharray=\"{dash}\"")
    };
    // Lines join runs of consecutive good points only: a failed cell
    // breaks the line, so nothing is drawn as if it were fine.
    let mut run: Vec<(f64, f64)> = Vec::new();
    let flush = |run: &mut Vec<(f64, f64)>, o: &mut String| {
        if run.len() >= 2 {
            let pts: Vec<String> = run.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(
                o,
                "<polyline class=\"series\" points=\"{}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"{dash_attr}/>",
                pts.join(" ")
            );
        }
        run.clear();
    };
    for p in &s.points {
        match p.y {
            Some(y) if p.ok && y.is_finite() => run.push((f.px(p.x), f.py(y))),
            _ => flush(&mut run, o),
        }
    }
    flush(&mut run, o);
    for p in &s.points {
        let x = f.px(p.x);
        if let (Some((a, b)), Some(_)) = (p.ci, p.y) {
            if a.is_finite() && b.is_finite() {
                let (ya, yb) = (f.py(a), f.py(b));
                let _ = writeln!(
                    o,
                    "<path class=\"error-bar\" d=\"M{x:.1} {ya:.1}V{yb:.1}M{:.1} {ya:.1}H{:.1}M{:.1} {yb:.1}H{:.1}\" stroke=\"{color}\" stroke-width=\"1.3\" fill=\"none\"/>",
                    x - 4.0,
                    x + 4.0,
                    x - 4.0,
                    x + 4.0
                );
            }
        }
        // A cell without a value sits on the x axis.
        let y =
            p.y.filter(|y| y.is_finite())
                .map_or(f.y0 + PANEL_H, |y| f.py(y));
        let fill = if p.ok && p.y.is_some() { color } else { "#fff" };
        marker(o, s.variant, x, y, color, fill, &p.tip);
    }
}

/// A marker of the variant's shape with its tooltip.
fn marker(o: &mut String, variant: usize, x: f64, y: f64, stroke: &str, fill: &str, tip: &str) {
    let style = format!("fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"2\"");
    let tip = format!("<title>{}</title>", esc(tip));
    let _ = match variant % 4 {
        0 => writeln!(
            o,
            "<circle class=\"marker\" cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"4\" {style}>{tip}</circle>"
        ),
        1 => writeln!(
            o,
            "<rect class=\"marker\" x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" {style}>{tip}</rect>",
            x - 4.0,
            y - 4.0
        ),
        2 => writeln!(
            o,
            "<path class=\"marker\" d=\"M{x:.1} {:.1}L{:.1} {:.1}L{:.1} {:.1}Z\" {style}>{tip}</path>",
            y - 5.0,
            x + 5.0,
            y + 4.0,
            x - 5.0,
            y + 4.0
        ),
        _ => writeln!(
            o,
            "<path class=\"marker\" d=\"M{x:.1} {:.1}L{:.1} {y:.1}L{x:.1} {:.1}L{:.1} {y:.1}Z\" {style}>{tip}</path>",
            y - 5.5,
            x + 5.5,
            y + 5.5,
            x - 5.5
        ),
    };
}

fn draw_legend(o: &mut String, spec: &ChartSpec, l: &Layout) {
    o.push_str("<g class=\"legend\">\n");
    for (i, (label, color, variant)) in legend_entries(spec).into_iter().enumerate() {
        let (r, c) = (i / l.legend_cols, i % l.legend_cols);
        let x = RIGHT + c as f64 * l.legend_col_w;
        let y = l.legend_top + r as f64 * LEGEND_ROW + 10.0;
        let stroke = PALETTE[color % PALETTE.len()];
        let dash = DASHES[variant % DASHES.len()];
        let dash_attr = if dash.is_empty() {
            String::new()
        } else {
            format!(" stroke-dasharray=\"{dash}\"")
        };
        let _ = writeln!(
            o,
            "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{stroke}\" stroke-width=\"2\"{dash_attr}/>",
            x + SAMPLE_W
        );
        marker(o, variant, x + SAMPLE_W / 2.0, y, stroke, stroke, label);
        let _ = writeln!(
            o,
            "<text class=\"legend-label\" x=\"{}\" y=\"{}\" font-size=\"{LEGEND_PX}\">{}</text>",
            x + SAMPLE_W + 10.0,
            y + 4.5,
            esc(label)
        );
    }
    let note = legend_note(spec);
    if !note.is_empty() {
        let rows = legend_entries(spec).len().div_ceil(l.legend_cols);
        let _ = writeln!(
            o,
            "<text class=\"legend-note\" x=\"{RIGHT}\" y=\"{}\" font-size=\"{}\" fill=\"#555\">{}</text>",
            l.legend_top + rows as f64 * LEGEND_ROW + 14.0,
            LEGEND_PX - 1.0,
            esc(&note)
        );
    }
    o.push_str("</g>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pt(x: f64, y: f64, ok: bool) -> Point {
        Point {
            x,
            y: Some(y),
            ci: Some((y * 0.9, y * 1.1)),
            ok,
            tip: format!("x={x} y={y}"),
        }
    }

    fn spec(labels: &[&str], panels: usize) -> ChartSpec {
        ChartSpec {
            title: "e5: requests/s vs concurrency".into(),
            x_label: "concurrency".into(),
            y_label: "requests/s".into(),
            log_x: true,
            log_y: false,
            integer_x: true,
            columns: panels,
            panels: (0..panels)
                .map(|i| Panel {
                    title: format!("keep-alive {}", if i == 0 { "off" } else { "on" }),
                    series: labels
                        .iter()
                        .enumerate()
                        .map(|(c, l)| Series {
                            label: l.to_string(),
                            color: c,
                            variant: 0,
                            points: vec![
                                pt(1.0, 100.0, true),
                                pt(50.0, 900.0, false),
                                pt(1000.0, 800.0, true),
                            ],
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The x of every `<text class="legend-label">` and its text.
    fn legend_labels(svg: &str) -> Vec<(f64, String)> {
        svg.split("<text class=\"legend-label\" x=\"")
            .skip(1)
            .map(|rest| {
                let x: f64 = rest[..rest.find('"').unwrap()].parse().unwrap();
                let text = &rest[rest.find('>').unwrap() + 1..rest.find("</text>").unwrap()];
                (x, text.to_string())
            })
            .collect()
    }

    fn width(svg: &str) -> f64 {
        let rest = &svg[svg.find("width=\"").unwrap() + 7..];
        rest[..rest.find('"').unwrap()].parse().unwrap()
    }

    #[test]
    fn legend_text_always_fits_inside_the_svg() {
        let long =
            "cmd:/usr/local/bin/my-very-own-server --threads 8 --port {port} --log /dev/null";
        // model subset: any few target names make legend labels.
        for labels in [
            vec!["model:event-loop", "nginx"],
            vec![long, "model:thread-pool workers=4 cpus=2"],
            (0..12).map(|_| "model:thread-per-conn").collect(),
        ] {
            let svg = svg(&spec(&labels, 2));
            let w = width(&svg);
            let found = legend_labels(&svg);
            assert_eq!(found.len(), labels.len(), "one legend entry per line");
            for (x, text) in found {
                assert!(
                    x + text_width(&text, LEGEND_PX) <= w,
                    "legend label '{text}' at {x} overruns the {w}-wide chart"
                );
                assert!(labels.iter().any(|l| esc(l) == text), "label cut: {text}");
            }
        }
    }

    #[test]
    fn failed_cells_are_hollow_and_break_the_line() {
        let s = svg(&spec(&["nginx"], 1));
        // 1 and 1000 are good, 50 failed: no line joins three points,
        // and the failed marker is white inside.
        assert!(
            !s.contains("class=\"series\""),
            "no two consecutive good points: {s}"
        );
        assert!(s.contains("fill=\"#fff\" stroke=\"#1f77b4\""));
        assert!(s.contains("hollow markers"));
        assert!(s.contains("<title>x=50 y=900</title>"));
        assert!(s.contains("class=\"error-bar\""));
        assert!(
            s.starts_with("<svg") && s.contains("<title>e5: requests/s vs concurrency</title>")
        );
    }

    #[test]
    fn log_axes_label_decades() {
        let s = svg(&spec(&["nginx"], 2));
        for t in [">1<", ">10<", ">100<", ">1000<"] {
            assert!(s.contains(t), "tick {t} missing");
        }
    }

    #[test]
    fn one_run_has_no_error_bar() {
        let mut sp = spec(&["nginx"], 1);
        for p in &mut sp.panels[0].series[0].points {
            p.ci = None;
            p.ok = true;
        }
        let s = svg(&sp);
        assert!(!s.contains("error-bar"));
        assert!(s.contains("class=\"series\""));
        assert!(!s.contains("hollow"));
    }
}
