//! Smoke test of the shared harness: every model starts, answers and stops,
//! each as a test of its own so that one model's failure hides no other's.

use crate::common;
use common::*;

per_model!(starts_serves_and_exits_zero_on_sigterm);

fn starts_serves_and_exits_zero_on_sigterm(model: &str) {
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
