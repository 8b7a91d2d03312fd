//! `loadlab report DIR` against a raw.csv built here: every derived file is
//! written, the summary numbers match an independent computation, a second
//! render is byte-identical, failed runs are listed, bad directories are
//! refused, and the HTML page renders in headless Chromium without a
//! single request leaving it.

mod chromium;
mod evidence;
mod flags;
mod numbers;
mod rendering;
pub mod support;
