//! Finding a reference server's program (nginx, go): a path an environment
//! variable names, else the PATH, else where distributions put it.

use std::path::PathBuf;

/// The program `env` names (a path that is not a file means "not
/// installed": tests take a bare machine's path that way; empty counts as
/// unset, as it does for most variables), else the first file called
/// `name` in a PATH directory, else the first of `fallbacks` that is one.
pub fn find_program(env: &str, name: &str, fallbacks: &[&str]) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .chain(fallbacks.iter().map(PathBuf::from))
        .find(|p| p.is_file())
}
