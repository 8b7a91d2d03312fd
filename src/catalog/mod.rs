//! The project's shared vocabulary: the registry of concurrency models
//! (names, accounts, worker rules), the registry of presets (the
//! experiments), and the slow-client kinds. A leaf above `sys`, so every
//! layer names models, presets and slow clients the same way without
//! importing the server, the lab or each other.

pub mod models;
pub mod presets;
pub mod slow;

/// The entry of a registry's `all` whose `name` is `s`, else one line
/// naming every entry: the lookup behind each registry's `FromStr`.
pub fn parse_named<T: Copy>(
    all: &[T],
    name: fn(T) -> &'static str,
    what: &str,
    s: &str,
) -> Result<T, String> {
    all.iter().copied().find(|&t| name(t) == s).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|&t| name(t)).collect();
        format!(
            "unknown {what} '{s}' (expected one of: {})",
            names.join(", ")
        )
    })
}
