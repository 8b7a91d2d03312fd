//! What identifies one load across its shards: the hash of its whole
//! configuration, and what a shard's JSON records about it.

use sha2::{Digest, Sha256};

use super::config::BenchConfig;
use super::shard::{Shard, ShardInfo};
use super::stats::HISTOGRAM_PARAMS;

/// A hash of the load configuration as a whole: every shard of one load
/// computes the same one (the totals, not the shard's shares), so `merge`
/// can refuse shards of different loads. Covers what changes the meaning
/// of a latency or a count: target, request bytes, load shape, timeouts,
/// start time and the histogram parameters.
pub fn config_hash(cfg: &BenchConfig) -> String {
    let request = Sha256::digest(cfg.request.encode(&cfg.target));
    let fields = serde_json::json!({
        "url": format!("{}://{}{}", cfg.target.scheme(), cfg.target.host_header(), cfg.target.path),
        "method": cfg.request.method,
        "request_sha256": hex(&request),
        "keep_alive": cfg.request.keep_alive,
        "requests": cfg.requests,
        "concurrency": cfg.concurrency,
        "rate": cfg.rate,
        "duration_s": cfg.duration.map(|d| d.as_secs_f64()),
        "warmup_s": cfg.warmup.map(|d| d.as_secs_f64()),
        "timeout_s": cfg.timeout.as_secs_f64(),
        "variable_length": cfg.variable_length,
        "start_at_unix_ms": cfg.start_at.map(super::clock::unix_ms),
        "histogram": HISTOGRAM_PARAMS,
    });
    let digest = Sha256::digest(fields.to_string().as_bytes());
    format!("sha256:{}", hex(&digest[..16]))
}

/// What the JSON of shard `s` of the load `whole` records.
pub fn shard_info(whole: &BenchConfig, s: Shard) -> ShardInfo {
    ShardInfo {
        index: s.index,
        count: s.count,
        config_hash: config_hash(whole),
        histogram: HISTOGRAM_PARAMS,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shard_of_one_load_has_its_hash_and_other_loads_another() {
        let cfg = BenchConfig {
            requests: Some(100),
            concurrency: 8,
            shard: Some(Shard { index: 0, count: 4 }),
            ..BenchConfig::new(
                crate::net::url::HttpUrl::parse("http://127.0.0.1:9/").unwrap(),
                crate::bench::RequestSpec {
                    method: "GET".into(),
                    ..Default::default()
                },
            )
        };
        let hash = config_hash(&cfg);
        let other_shard = BenchConfig {
            shard: Some(Shard { index: 3, count: 4 }),
            ..cfg.clone()
        };
        assert_eq!(config_hash(&other_shard), hash);
        for other in [
            BenchConfig {
                requests: Some(101),
                ..cfg.clone()
            },
            BenchConfig {
                concurrency: 9,
                ..cfg.clone()
            },
            BenchConfig {
                rate: Some(10.0),
                ..cfg.clone()
            },
        ] {
            assert_ne!(config_hash(&other), hash);
        }
        // The part a shard runs holds the shares; its hash is the whole's.
        let part = cfg.part();
        assert_eq!((part.requests, part.concurrency), (Some(25), 2));
    }
}
