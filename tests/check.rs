//! `loadlab check`: the expected results of loadlab's own models, nginx
//! and Go (`targets`), the zoo of broken servers, each defect found with
//! nothing else failing (`zoo`), and the command's answers to bad usage,
//! non-servers and its JSON schema (`cli`).

mod cli;
mod support;
mod targets;
mod zoo;
