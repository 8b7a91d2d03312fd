//! Renderers: turn a `BenchResult` into ab's text report, JSON or CSV.

mod ab;
mod csv;
mod extras;
mod html;
mod series;
mod server;

pub use ab::{
    ab_after_run, ab_preamble, ab_report, ab_report_as, banner, percentile_csv, version_line,
    AbLayout, BEYOND_AB,
};
pub use csv::{csv_header, csv_row};
pub use series::{series_csv, SERIES_HEADER};

pub use html::{html_report, HtmlAttrs};

use super::json::BenchJson;
use super::result::BenchResult;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Ab,
    Json,
    Csv,
}

/// ab's own variants of its report: -d and -S for the text, -w (with
/// -x -y -z) for HTML tables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AbOptions {
    pub layout: AbLayout,
    /// -w: the HTML table instead of the text.
    pub html: Option<HtmlAttrs>,
}

/// `render`, with ab's variants applied to the ab format.
pub fn render_with(r: &BenchResult, format: Format, ab: &AbOptions) -> String {
    match (format, &ab.html) {
        (Format::Ab, Some(attrs)) => html_report(r, attrs),
        (Format::Ab, None) => ab_report_as(r, ab.layout),
        _ => render(r, format),
    }
}

pub fn render(r: &BenchResult, format: Format) -> String {
    match format {
        Format::Ab => ab_report(r),
        Format::Json => {
            let mut s =
                serde_json::to_string_pretty(&BenchJson::from_result(r)).unwrap_or_default();
            s.push('\n');
            s
        }
        Format::Csv => format!("{}\n{}\n", csv_header(), csv_row(r)),
    }
}
