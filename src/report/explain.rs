//! The words around an experiment's numbers: the question it answers (from
//! the preset registry), the command that reproduces it, how to read its
//! charts and tables, and a paragraph on each model it measured (from the
//! model registry). Shared by the sweep page, summary.md and the stress
//! page so the three say the same thing.

use crate::catalog::models::{Model, GO_ABOUT};
use crate::catalog::presets::Preset;

/// The opening of one experiment section.
#[derive(Debug, Clone)]
pub struct Intro {
    pub question: String,
    /// The command line that reproduces the run, when it was recorded.
    pub command: Option<String>,
    pub how_to_read: String,
    /// (model name, its paragraph) for every model measured, registry order.
    pub models: Vec<(&'static str, &'static str)>,
}

/// What every sweep chart means, whatever the experiment.
const READ_CHARTS: &str = "Each chart has one panel per keep-alive setting on a shared y axis, \
and each target keeps one colour in every chart. A marker is the mean over the measured \
repeats and its bar the 95 % confidence interval (Student's t over the repeats; no bar when \
there was one run); lines only join cells whose every answer was 2xx or 3xx, and a hollow \
marker is a cell with failed or non-2xx answers, or with no answer at all (on the x axis). \
Requests/s counts answered 2xx/3xx requests only. Hover a marker for its exact figures.";

/// The question of a sweep that is not a preset (a plain `loadlab sweep`
/// or the bare `loadlab`).
const SWEEP_QUESTION: &str = "How do the targets compare in answered requests per second, \
latency and server CPU per request as concurrency grows?";

fn preset_hint(p: Option<Preset>) -> &'static str {
    match p {
        Some(Preset::E1) => {
            " Compare the lines at each concurrency: where one flattens while \
another still rises, that server has reached its limit."
        }
        Some(Preset::E2) => {
            " Per-client throughput falling as clients are added is the server \
sharing its bandwidth; aggregate throughput that stops rising is where it saturates."
        }
        Some(Preset::E3) => {
            " One concurrency only: read the markers' heights against each \
other, and CPU per request and memory for what each answer cost."
        }
        Some(Preset::E4) => {
            " The x axis is the pool size: a pool larger than the cores it may \
use should help only while threads wait on IO."
        }
        Some(Preset::E5) => {
            " The two panels show what keep-alive saves: the gap between them \
is the cost of a new connection per request."
        }
        Some(Preset::E6) => {
            " One client at c=1 throughout: the slow-clients table sets each \
cell's p99 and failures beside the same client with no slow clients, in the same \
rounds. A blocking model that is denied shows it there, as timeouts and failed \
requests, rather than ending the sweep."
        }
        None => {
            " Server CPU per request separates servers even where requests/s cannot \
(a client-bound cell shows every server at the client's rate)."
        }
    }
}

/// The intro of the experiment labelled `experiment` over `targets`.
pub fn intro<'a>(
    experiment: &str,
    command: Option<&str>,
    targets: impl IntoIterator<Item = &'a str>,
) -> Intro {
    let preset = Preset::of_label(experiment);
    Intro {
        question: preset.map_or(SWEEP_QUESTION, Preset::question).to_string(),
        command: command.filter(|c| !c.is_empty()).map(str::to_string),
        how_to_read: format!("{READ_CHARTS}{}", preset_hint(preset)),
        models: models_of(targets),
    }
}

/// The stress page's intro: E2's question, and what its charts mean.
pub fn stress_intro<'a>(models: impl IntoIterator<Item = &'a str>) -> Intro {
    Intro {
        question: Preset::E2.question().to_string(),
        command: None,
        how_to_read: format!(
            "Each chart is one operation and file size; each panel one server model and \
worker count, on a shared y axis, and each model keeps one colour. A marker is one cell: \
the mean throughput of each client's verified transfers (one run per cell, so no interval). \
A hollow marker is a cell where some transfers failed or did not verify; only verified \
transfers count as throughput.{}",
            preset_hint(Some(Preset::E2))
        ),
        models: models_of(models),
    }
}

/// The models named by `targets` (`model:NAME`, `model:NAME:workers=4`,
/// or a bare model name), each once, in registry order, then Go's
/// net/http when a `go` target is among them.
pub(crate) fn models_of<'a>(
    targets: impl IntoIterator<Item = &'a str>,
) -> Vec<(&'static str, &'static str)> {
    let mut found: Vec<Model> = Vec::new();
    let mut go = false;
    for t in targets {
        go |= t == "go" || t.starts_with("go:");
        let name = t.strip_prefix("model:").unwrap_or(t);
        let name = name.split(':').next().unwrap_or(name);
        if let Ok(m) = name.parse::<Model>() {
            if !found.contains(&m) {
                found.push(m);
            }
        }
    }
    found.sort_by_key(|m| *m as usize);
    let mut about: Vec<_> = found
        .into_iter()
        .map(|m| (m.name(), m.info().about))
        .collect();
    if go {
        about.push(("go", GO_ABOUT));
    }
    about
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_ask_their_question_and_models_get_their_paragraph() {
        let i = intro(
            "e1-quick",
            Some("loadlab sweep --preset e1 --quick"),
            // model subset: two models and nginx, to see which targets get a paragraph.
            [
                "model:thread-per-conn",
                "model:event-loop:workers=2",
                "nginx",
                "model:event-loop",
            ],
        );
        assert_eq!(i.question, Preset::E1.question());
        assert_eq!(
            i.command.as_deref(),
            Some("loadlab sweep --preset e1 --quick")
        );
        let names: Vec<&str> = i.models.iter().map(|m| m.0).collect();
        // model subset: the models the targets above name, in registry order.
        assert_eq!(names, ["thread-per-conn", "event-loop"]);
        assert_eq!(i.models[1].1, Model::EventLoop.info().about);
        let plain = intro("default", Some(""), ["url:http://127.0.0.1:1/"]);
        assert_eq!(plain.question, SWEEP_QUESTION);
        assert!(plain.command.is_none() && plain.models.is_empty());
        let s = stress_intro(["prefork", "external"]);
        assert_eq!(s.question, Preset::E2.question());
        assert_eq!(s.models.len(), 1);
    }

    #[test]
    fn a_go_target_is_explained_as_go_net_http_after_the_models() {
        // model subset: one model beside the Go server.
        let i = intro("e5-quick", None, ["go:workers=1", "model:event-loop", "go"]);
        let names: Vec<&str> = i.models.iter().map(|m| m.0).collect();
        assert_eq!(names, ["event-loop", "go"]);
        assert!(
            i.models[1].1.starts_with("Go net/http"),
            "{}",
            i.models[1].1
        );
    }
}
