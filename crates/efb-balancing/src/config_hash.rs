use std::fmt::Write;

use efb_model::Config;
use sha2::{Digest, Sha256};

/// The text is public, not only its digest, so that the comparison tool can show operators
/// *what* differs between two balancers. Local port names are left out on purpose: crossed
/// balancers cable the same filters to different ports.
pub fn config_hash_text(config: &Config) -> String {
    let mut text = String::from("efb-balancing-v2\n");
    // Writing to a String cannot fail.
    let _ = writeln!(text, "method {}", config.balancing_method.as_str());
    // BTreeMap<String, _> iterates in byte order of the names, as MODEL.md requires.
    for (name, unit) in &config.units {
        let _ = writeln!(
            text,
            "unit {name} cores {} pairs {} rebalance {}",
            unit.cores,
            unit.pairs.len(),
            unit.rebalance
        );
        for pair in &unit.pairs {
            let _ = writeln!(text, "pair {}", pair.name);
        }
    }
    text
}

pub fn config_hash(config: &Config) -> String {
    let digest = Sha256::digest(config_hash_text(config).as_bytes());
    digest
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}
