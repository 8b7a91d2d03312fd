//! The file service under /files/, every rule against every model: one
//! suite, instantiated per model by `per_model!`. Each test starts its own
//! `loadlab serve` on 127.0.0.1:0 with its own upload directory and talks
//! to it with raw sockets or real curl.

mod cli;
pub mod crash;
pub mod names;
pub mod service;
pub mod support;
pub mod uploads;

// The per-model suite, instantiated here once: per_model! also checks that
// it names every model of the registry.
use self::crash::{
    a_starting_server_leaves_a_live_upload_alone,
    restart_after_kill_9_mid_upload_removes_the_temporary_file,
};
use self::names::{
    bad_names_are_400_and_touch_nothing, listing_hides_temporary_and_dot_files,
    names_with_dots_inside_are_plain_files, symlinks_are_not_followed,
};
use self::service::{
    curl_round_trip, delete_204_then_404, get_and_head_carry_validators_and_304,
    listing_is_sorted_json_with_times,
    regression_conditional_uploads_and_deletes_were_carried_out_regardless,
    sha256_query_returns_the_digest, single_ranges_206_and_416,
};
use self::uploads::{
    body_cut_off_leaves_no_file, chunked_upload_is_stored_whole,
    concurrent_same_name_uploads_give_one_whole_file, full_disk_is_507_and_leaves_nothing,
    head_alone_over_max_upload_gets_413_and_nothing_is_written, killed_client_leaves_no_file,
    over_max_upload_is_413_before_writing, put_creates_then_replaces,
    readers_see_the_old_file_or_the_whole_new_one_during_a_replace,
    small_and_large_pieces_are_stored_in_order, the_upload_digest_is_computed_only_when_asked,
};

per_model!(
    listing_is_sorted_json_with_times,
    put_creates_then_replaces,
    chunked_upload_is_stored_whole,
    get_and_head_carry_validators_and_304,
    single_ranges_206_and_416,
    sha256_query_returns_the_digest,
    delete_204_then_404,
    bad_names_are_400_and_touch_nothing,
    symlinks_are_not_followed,
    over_max_upload_is_413_before_writing,
    body_cut_off_leaves_no_file,
    killed_client_leaves_no_file,
    concurrent_same_name_uploads_give_one_whole_file,
    curl_round_trip,
    full_disk_is_507_and_leaves_nothing,
    regression_conditional_uploads_and_deletes_were_carried_out_regardless,
    head_alone_over_max_upload_gets_413_and_nothing_is_written,
    readers_see_the_old_file_or_the_whole_new_one_during_a_replace,
    listing_hides_temporary_and_dot_files,
    restart_after_kill_9_mid_upload_removes_the_temporary_file,
    a_starting_server_leaves_a_live_upload_alone,
    names_with_dots_inside_are_plain_files,
    the_upload_digest_is_computed_only_when_asked,
    small_and_large_pieces_are_stored_in_order,
);
