//! Renderers: turn a `BenchResult` into ab's text report, JSON or CSV.

mod ab;
mod csv;
mod extras;

pub use ab::{ab_after_run, ab_preamble, ab_report, banner, percentile_csv, BEYOND_AB};
pub use csv::{csv_header, csv_row};

use super::result::{BenchJson, BenchResult};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Ab,
    Json,
    Csv,
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
