//! Smoke test of the shared harness: every model starts, answers and stops.

mod common;
use common::*;

#[test]
fn every_model_starts_serves_and_exits_zero_on_sigterm() {
    for model in MODELS {
        let mut server = TestServer::start(model, &[]);
        assert!(
            server.line.contains(&format!("model={model}")),
            "{}",
            server.line
        );
        assert_alive(&server);
        assert_eq!(
            server.terminate(),
            Some(0),
            "{model} did not exit 0 on SIGTERM"
        );
    }
}
