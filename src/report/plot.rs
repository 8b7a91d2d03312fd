//! Draws one line chart as SVG text with plotters' SVG backend. Text is
//! written as SVG `<text>` elements in the generic `sans-serif` family, so
//! no font file is needed to draw and the viewer's own font renders it.
//! The legend sits in its own column right of the plot, where it cannot
//! hide a line however many series there are.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::num::tick;

/// One line: its points sorted by x, a palette index, dashed or solid.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub color: usize,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone)]
pub struct ChartSpec {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    /// Log y axis: latencies that span decades (0.1 ms at c=1, 200 ms at
    /// c=1000) would otherwise flatten every small value onto zero.
    pub log_y: bool,
    /// x takes whole numbers only (concurrency, workers): no tick at 0.5.
    pub integer_x: bool,
    pub series: Vec<Series>,
}

const PLOT_W: u32 = 560;
const LEGEND_W: u32 = 280;
const MIN_H: u32 = 400;
const LEGEND_ROW: u32 = 22;
const FONT: &str = "sans-serif";
/// Legend labels longer than this are cut: a `cmd:` target can be a whole
/// shell line.
pub const LABEL_MAX: usize = 36;

/// Tableau 10: distinct on screen and in greyscale print.
const PALETTE: [(u8, u8, u8); 10] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
];

fn color(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

pub fn svg(spec: &ChartSpec) -> anyhow::Result<String> {
    let (lo, hi) = bounds(
        spec.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0)),
    );
    if spec.log_x {
        with_y(spec, (lo / 1.25..hi * 1.25).log_scale(), None)
    } else {
        // One x value (E3's single concurrency) gets room on both sides
        // instead of an axis one unit wide.
        let pad = if hi > lo {
            (hi - lo) * 0.05
        } else {
            (lo.abs() * 0.5).max(1.0)
        };
        // Few whole numbers: one label each (workers 0, 1, 2, ...).
        let labels = (spec.integer_x && hi > lo && hi - lo <= 16.0).then(|| (hi - lo) as usize + 1);
        with_y(spec, (lo - pad)..(hi + pad), labels)
    }
}

fn with_y<X>(spec: &ChartSpec, x: X, x_labels: Option<usize>) -> anyhow::Result<String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let (lo, hi) = bounds(
        spec.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1)),
    );
    if spec.log_y {
        draw(spec, x, (lo / 1.25..hi * 1.25).log_scale(), x_labels)
    } else {
        // From zero, so heights compare; headroom so the top point is not
        // on the frame.
        let top = if hi > 0.0 { hi * 1.1 } else { 1.0 };
        let top = if top.is_finite() { top } else { hi };
        draw(spec, x, 0.0..top, x_labels)
    }
}

fn bounds(xs: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    if lo.is_finite() && hi.is_finite() {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("drawing a chart: {e}")
}

fn draw<X, Y>(spec: &ChartSpec, x: X, y: Y, x_labels: Option<usize>) -> anyhow::Result<String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let rows = spec.series.len() as u32;
    let height = MIN_H.max(60 + rows * LEGEND_ROW);
    let mut out = String::new();
    {
        let root =
            SVGBackend::with_string(&mut out, (PLOT_W + LEGEND_W, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_horizontally(PLOT_W);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(&spec.title, (FONT, 22))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(x, y)
            .map_err(err)?;
        let x_tick = |v: &f64| {
            if spec.integer_x && v.fract() != 0.0 {
                String::new()
            } else {
                tick(*v)
            }
        };
        let mut mesh = chart.configure_mesh();
        if let Some(n) = x_labels {
            mesh.x_labels(n);
        }
        mesh.x_desc(spec.x_label.as_str())
            .y_desc(spec.y_label.as_str())
            .x_label_formatter(&x_tick)
            .y_label_formatter(&|v| tick(*v))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .light_line_style(RGBColor(235, 235, 235))
            .bold_line_style(RGBColor(210, 210, 210))
            .draw()
            .map_err(err)?;
        for s in &spec.series {
            let style = ShapeStyle::from(&color(s.color)).stroke_width(2);
            if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(s.points.iter().copied(), 7, 5, style))
                    .map_err(err)?;
            } else {
                chart
                    .draw_series(LineSeries::new(s.points.iter().copied(), style))
                    .map_err(err)?;
            }
            // Markers show where the measurements are, and keep a series
            // of one point visible.
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|p| Circle::new(*p, 3, color(s.color).filled())),
                )
                .map_err(err)?;
        }
        legend(&legend_area, &spec.series)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    series: &[Series],
) -> anyhow::Result<()> {
    let top = 48;
    for (i, s) in series.iter().enumerate() {
        let y = top + i as i32 * LEGEND_ROW as i32;
        // The sample is long enough to show three dashes, so a dashed
        // (keep-alive off) line reads as dashed here too. Drawn as thin
        // rectangles, not lines: every polyline in the SVG is then a
        // series, which is how the browser test finds them.
        let segments: &[(i32, i32)] = if s.dashed {
            &[(4, 10), (16, 22), (28, 34)]
        } else {
            &[(4, 34)]
        };
        for (a, b) in segments {
            area.draw(&Rectangle::new(
                [(*a, y - 1), (*b, y + 1)],
                color(s.color).filled(),
            ))
            .map_err(err)?;
        }
        area.draw(&Circle::new((19, y), 3, color(s.color).filled()))
            .map_err(err)?;
        let text = TextStyle::from((FONT, 16).into_font()).color(&BLACK).pos(
            plotters::style::text_anchor::Pos::new(
                plotters::style::text_anchor::HPos::Left,
                plotters::style::text_anchor::VPos::Center,
            ),
        );
        area.draw(&Text::new(shorten(&s.label), (42, y), text))
            .map_err(err)?;
    }
    Ok(())
}

/// `s` cut to `max` characters, the cut marked with an ellipsis.
pub fn shorten_to(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn shorten(s: &str) -> String {
    shorten_to(s, LABEL_MAX)
}
