//! `--emit` and its flags on `loadlab bench`: what to print instead of
//! running the load (`k8s_job` prints it).

use clap::{Args, ValueEnum};

/// What `--emit` prints instead of running the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// A Kubernetes Indexed Job (JSON) of `--shards` pods.
    K8sJob,
}

/// `--emit` and the flags that only shape what it prints; none of them is
/// part of the load, so none reaches the pods' command.
#[derive(Args, Debug, Default)]
pub struct EmitArgs {
    /// Print a manifest instead of running: `k8s-job` is a Kubernetes
    /// Indexed Job (JSON) whose --shards pods each run this command as
    /// one shard (--shard auto, a common --start-at) and print its JSON
    /// result, for `kubectl logs` and `loadlab merge`. See
    /// docs/guide/distributed.md.
    #[arg(long, value_enum, value_name = "KIND")]
    pub emit: Option<Emit>,
    /// With --emit k8s-job: how many shards (pods) apply the load.
    #[arg(
        long,
        value_name = "N",
        requires = "emit",
        allow_negative_numbers = true
    )]
    pub shards: Option<i64>,
    /// With --emit k8s-job: the container image, which must have loadlab
    /// on its PATH [default: loadlab:VERSION, this binary's version].
    #[arg(long, value_name = "IMAGE", requires = "emit")]
    pub image: Option<String>,
    /// With --emit k8s-job: the Job's name [default: loadlab-bench].
    #[arg(long, value_name = "NAME", requires = "emit")]
    pub job_name: Option<String>,
}
