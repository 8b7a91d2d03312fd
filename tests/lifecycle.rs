//! Process and resource behaviour of the models: prefork replaces a worker
//! killed under load, SIGTERM lets a slow download finish, running out of
//! descriptors neither kills nor spins the server, the connection limit
//! queues the rest, a silent client waits in the kernel (TCP_DEFER_ACCEPT),
//! and a thread pool of 0 workers grows and shrinks.

pub mod connections;
pub mod shutdown;
mod support;
mod workers;

// The per-model suite, instantiated here once: per_model! also checks that
// it names every model of the registry.
use self::connections::running_out_of_descriptors_neither_kills_nor_spins;
use self::shutdown::{
    a_timed_out_body_leaves_nothing_for_sigterm_to_wait_for,
    regression_sigterm_during_startup_waited_out_the_grace_period,
    regression_sigterm_reset_requests_in_flight_on_keep_alive_connections,
    sigterm_during_slow_download_lets_it_finish, sigterm_exit_is_bounded_by_the_grace_period,
};

per_model!(
    sigterm_during_slow_download_lets_it_finish,
    sigterm_exit_is_bounded_by_the_grace_period,
    running_out_of_descriptors_neither_kills_nor_spins,
    regression_sigterm_reset_requests_in_flight_on_keep_alive_connections,
    regression_sigterm_during_startup_waited_out_the_grace_period,
    a_timed_out_body_leaves_nothing_for_sigterm_to_wait_for,
);
