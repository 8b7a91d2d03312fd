//! `loadlab bench --emit k8s-job`: the manifest read back as Kubernetes'
//! own Job type (k8s-openapi), its pods run here as the kubelet would run
//! them (no cluster: command, args and env as the manifest gives them, the
//! index Kubernetes would set, stdout and stderr in one log) and merged,
//! and the combinations it refuses.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{loadlab_bin, TestServer};
use k8s_openapi::api::batch::v1::Job;
use serde_json::Value;

/// `loadlab bench ARGS...`: (stdout, stderr, exit code).
fn bench(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(loadlab_bin())
        .arg("bench")
        .args(args)
        .output()
        .expect("run loadlab");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (
        text(&out.stdout),
        text(&out.stderr),
        out.status.code().unwrap_or(-1),
    )
}

/// The manifest `loadlab bench ARGS...` prints, as a k8s-openapi Job.
fn manifest(args: &[&str]) -> Job {
    let (out, err, code) = bench(args);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.lines().count(), 1, "one line says when: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not a Job: {e}\n{out}"))
}

fn unix_ms(t: SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).unwrap().as_millis()
}

#[test]
fn k8s_job_is_an_indexed_job_whose_pods_repeat_the_bench_command() {
    // The --emit flags among the others, in both spellings, and values
    // with spaces, quotes and a dollar sign that a shell would mangle.
    let load = [
        "-n",
        "3000",
        "-c",
        "8",
        "-k",
        "-H",
        "X-Note: two  spaces, 'quotes' and $HOME",
        "--body",
        "a b\tc",
        "--threads",
        "1",
    ];
    // A name only the cluster resolves (.invalid resolves nowhere).
    let url = "http://target.invalid:8080/echo";
    let emit = [
        "--emit",
        "k8s-job",
        "--shards=4",
        "--image",
        "registry.example/loadlab:dev",
    ];
    let before = SystemTime::now();
    let args = [
        &load[..2],
        &emit[..],
        &load[2..],
        &["--job-name", "run-7", url],
    ]
    .concat();
    let job = manifest(&args);

    assert_eq!(job.metadata.name.as_deref(), Some("run-7"));
    let spec = job.spec.expect("spec");
    assert_eq!(spec.completion_mode.as_deref(), Some("Indexed"));
    assert_eq!(spec.completions, Some(4));
    assert_eq!(spec.parallelism, Some(4));
    // A retried shard would count its requests twice.
    assert_eq!(spec.backoff_limit, Some(0));
    let pod = spec.template.spec.expect("pod spec");
    assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
    assert_eq!(pod.containers.len(), 1);
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("registry.example/loadlab:dev"));
    assert_eq!(c.command.as_deref(), Some(&["loadlab".to_string()][..]));
    let env: Vec<(String, Option<String>)> = c
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    assert_eq!(env, [("LOADLAB_SHARDS".to_string(), Some("4".to_string()))]);

    // The pods' arguments: what loadlab adds, then the command as typed
    // without the --emit flags, each argument whole.
    let pod_args = c.args.clone().expect("args");
    let start: u128 = pod_args[4].parse().expect("--start-at in Unix ms");
    let added = [
        "bench",
        "--shard",
        "auto",
        "--start-at",
        &pod_args[4],
        "--format",
        "json",
        "-q",
    ];
    assert_eq!(pod_args[..8], added);
    let typed: Vec<&str> = [&load[..], &[url]].concat();
    assert_eq!(pod_args[8..], typed);
    // Without --start-at the shards start two minutes after the manifest.
    let lead = start - unix_ms(before);
    assert!((115_000..=125_000).contains(&lead), "{lead} ms ahead");

    // A --start-at given is the pods' own; so are --format json and -q.
    let at = (unix_ms(SystemTime::now()) + 600_000).to_string();
    let given = ["--emit", "k8s-job", "--shards", "2", "-q", "--format=json"];
    let job = manifest(&[&given[..], &["--start-at", &at, "-n", "4", "-c", "2", url]].concat());
    let c = &job.spec.unwrap().template.spec.unwrap().containers[0];
    let want = [
        "bench",
        "--shard",
        "auto",
        "-q",
        "--format=json",
        "--start-at",
        &at,
    ];
    let want = [&want[..], &["-n", "4", "-c", "2", url]].concat();
    assert_eq!(c.args.as_deref().unwrap(), want);
    assert_eq!(
        c.image.as_deref(),
        Some(concat!("loadlab:", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(job.metadata.name.as_deref(), Some("loadlab-bench"));
}

/// Runs one pod's container here: its command (found on PATH, as in the
/// image) with its args and env, and the index Kubernetes sets; stdout
/// and stderr go to one file, as `kubectl logs` mixes them.
fn run_pod(job: &Job, index: u32, log: &Path) -> std::process::Child {
    let c = &job
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0];
    let command = c.command.as_ref().unwrap();
    let bin_dir = Path::new(loadlab_bin()).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let file = std::fs::File::create(log).unwrap();
    let mut cmd = Command::new(&command[0]);
    cmd.args(&command[1..])
        .args(c.args.as_ref().unwrap())
        .env("PATH", path)
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file);
    for e in c.env.iter().flatten() {
        cmd.env(&e.name, e.value.as_deref().unwrap_or_default());
    }
    cmd.spawn().expect("start the pod's command")
}

#[test]
fn k8s_job_pods_logs_merge_into_exactly_the_load() {
    let server = TestServer::start("event-loop", &[]);
    let dir = tempfile::tempdir().unwrap();
    let at = (unix_ms(SystemTime::now()) + 3_000).to_string();
    let url = server.url("/500B.html");
    for (n, open) in [("2000", &[][..]), ("1000", &["--rate", "2000"][..])] {
        let load = [&["-n", n, "-c", "6", "-k", "--threads", "1"][..], open].concat();
        let at = match open.is_empty() {
            true => at.clone(),
            false => (unix_ms(SystemTime::now()) + 3_000).to_string(),
        };
        let emit = ["--emit", "k8s-job", "--shards", "3", "--start-at", &at];
        let job = manifest(&[&emit[..], &load, &[&url]].concat());
        let logs: Vec<_> = (0..3)
            .map(|i| dir.path().join(format!("pod-{i}{}.log", open.len())))
            .collect();
        let pods: Vec<_> = (0..3)
            .map(|i| run_pod(&job, i, &logs[i as usize]))
            .collect();
        for mut p in pods {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let status = loop {
                if let Some(s) = p.try_wait().unwrap() {
                    break s;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "a pod ran over a minute"
                );
                std::thread::sleep(Duration::from_millis(50));
            };
            assert!(status.success(), "pod failed: {status}");
        }
        // The logs hold the JSON alone: nothing else reached stderr.
        let out = Command::new(loadlab_bin())
            .args(["merge", "--format", "json"])
            .args(&logs)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        let merged: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(merged["complete"], n.parse::<u64>().unwrap(), "{merged}");
        assert_eq!(merged["failed"], 0, "{merged}");
    }
}

#[test]
fn k8s_job_bad_combinations_are_one_line_errors() {
    let url = "http://127.0.0.1:9/";
    let past = (unix_ms(SystemTime::now()) - 1_000).to_string();
    for (args, why) in [
        (
            &["--emit", "k8s-job", "-n", "8", "-c", "4"][..],
            "needs --shards N",
        ),
        (
            &["--emit", "k8s-job", "--shards", "4", "-n", "8", "-c", "3"],
            "below the shard count 4",
        ),
        (
            &["--emit", "k8s-job", "--shards", "0", "-n", "8", "-c", "4"],
            "--shards 0: give 1 to",
        ),
        (
            &["--emit", "k8s-job", "--shards", "-2", "-n", "8", "-c", "4"],
            "--shards -2: give 1 to",
        ),
        (&["--shards", "2", "-n", "8", "-c", "4"], "--emit"),
        (
            &[
                "--emit", "k8s-job", "--shards", "2", "--shard", "0/2", "-n", "8", "-c", "4",
            ],
            "drop --shard",
        ),
        (
            &[
                "--emit", "k8s-job", "--shards", "2", "--out", "r.json", "-n", "8", "-c", "4",
            ],
            "--out would write inside the pod",
        ),
        (
            &[
                "--emit", "k8s-job", "--shards", "2", "--format", "ab", "-n", "8", "-c", "4",
            ],
            "drop --format",
        ),
        (
            &[
                "--emit", "k8s-job", "--shards", "2", "-v", "2", "-n", "8", "-c", "4",
            ],
            "stderr",
        ),
        (
            &[
                "--emit",
                "k8s-job",
                "--shards",
                "2",
                "--start-at",
                &past,
                "-n",
                "8",
                "-c",
                "4",
            ],
            "in the past",
        ),
        (
            &[
                "--emit",
                "k8s-job",
                "--shards",
                "2",
                "--job-name",
                "Run_1",
                "-n",
                "8",
                "-c",
                "4",
            ],
            "invalid --job-name",
        ),
        (
            &[
                "--emit", "k8s-job", "--shards", "2", "--image", "a b", "-n", "8", "-c", "4",
            ],
            "invalid --image",
        ),
        (
            &["--emit", "docker", "--shards", "2", "-n", "8", "-c", "4"],
            "invalid value 'docker'",
        ),
    ] {
        let (out, err, code) = bench(&[args, &[url]].concat());
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(
            out.is_empty(),
            "{args:?}: no manifest, not half of one: {out}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
}
