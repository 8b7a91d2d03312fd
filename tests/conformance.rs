//! One conformance suite of raw-socket cases, run against every model (as
//! ripgrep runs each test per regex engine): each group below becomes one
//! `#[test]` per model, e.g. `event_loop::malformed_requests_get_400`.
//!
//! Every error case checks the status, that the connection is closed
//! afterwards, and that the server still answers a good request.

pub mod connection;
pub mod limits;
pub mod malformed;
pub mod requests;
pub mod static_files;
mod support;
pub mod timeouts;

// The per-model suite, instantiated here once: per_model! also checks that
// it names every model of the registry.
use self::connection::{
    a_closing_response_carries_its_fin, date_and_server_headers, keep_alive_and_versions,
    pipelined_requests_answered_in_order, pipelined_requests_beyond_the_read_buffer,
};
use self::limits::{
    a_late_body_is_taken_while_the_close_lingers, body_limit_413, header_section_limits,
    request_line_limits,
};
use self::malformed::{
    incomplete_body_at_eof_gets_400, malformed_requests_get_400,
    regression_bare_cr_split_across_reads_was_accepted,
    regression_malformed_line_waited_for_the_header_timeout,
    unknown_known_methods_keep_the_connection, unsupported_codings_methods_versions,
};
use self::requests::{
    absolute_form_targets, expect_100_continue, head_requests,
    regression_205_carried_content_and_an_unknown_reason,
    regression_error_answers_to_head_carried_a_body, regression_http_1_2_was_505, request_bodies,
};
use self::static_files::{
    path_traversal_never_leaks, regression_name_too_long_was_a_500, static_files_from_a_root,
};
use self::timeouts::{
    header_timeout_408, idle_and_body_timeouts,
    regression_fresh_connection_closed_unanswered_when_others_waited,
    regression_trickled_head_held_a_blocking_worker_for_ever,
};

per_model!(
    keep_alive_and_versions,
    date_and_server_headers,
    pipelined_requests_answered_in_order,
    pipelined_requests_beyond_the_read_buffer,
    head_requests,
    expect_100_continue,
    request_bodies,
    absolute_form_targets,
    request_line_limits,
    header_section_limits,
    body_limit_413,
    a_late_body_is_taken_while_the_close_lingers,
    malformed_requests_get_400,
    incomplete_body_at_eof_gets_400,
    unsupported_codings_methods_versions,
    unknown_known_methods_keep_the_connection,
    header_timeout_408,
    idle_and_body_timeouts,
    static_files_from_a_root,
    path_traversal_never_leaks,
    regression_trickled_head_held_a_blocking_worker_for_ever,
    regression_bare_cr_split_across_reads_was_accepted,
    regression_fresh_connection_closed_unanswered_when_others_waited,
    regression_name_too_long_was_a_500,
    a_closing_response_carries_its_fin,
    regression_error_answers_to_head_carried_a_body,
    regression_205_carried_content_and_an_unknown_reason,
    regression_malformed_line_waited_for_the_header_timeout,
    regression_http_1_2_was_505,
);
