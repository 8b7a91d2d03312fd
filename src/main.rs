//! Thin entry point: everything lives in the library; errors become exit codes.

fn main() {
    std::process::exit(loadlab::cli::main());
}
