//! `efb-config hash-compare`: read every balancer at once, compare each with a reference,
//! and say what differs, as a table for people or JSON for monitoring.

use std::time::{Duration, Instant};

use efb_model::validation::Validator;
use efb_yang::input::Limit;
use serde::Serialize;

use crate::difference::{Difference, differences, reported_hash_difference};
use crate::fetch::{FetchError, Fetched, fetch};
use crate::inventory::Balancer;

/// The whole answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Report {
    /// True only when every balancer was read and all have the same balancing.
    pub agree: bool,
    /// The balancer the others are compared with (none when none could be read).
    pub reference: Option<String>,
    pub compared: usize,
    pub differing: usize,
    pub not_compared: usize,
    pub balancers: Vec<BalancerReport>,
    pub elapsed_ms: u64,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct BalancerReport {
    pub name: String,
    pub source: String,
    /// ok, unreachable, unauthenticated or error.
    pub status: &'static str,
    /// The hash of its configuration, computed here (as `efb-config hash` does).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// The hash the balancer itself reports (gNMI only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reported_hash: Option<String>,
    pub reference: bool,
    /// Absent when the balancer could not be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
    pub differences: Vec<Difference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub elapsed_ms: u64,
}

/// Reads every balancer concurrently (a slow one costs its own timeout, not the sum).
/// `reference`: the name of the balancer the others are compared with; by default the
/// first one listed that could be read. Files are read within `limit`.
pub async fn compare(
    validator: &Validator,
    balancers: &[Balancer],
    reference: Option<&str>,
    timeout: Duration,
    limit: &Limit,
) -> Report {
    let started = Instant::now();
    let reads = futures::future::join_all(balancers.iter().map(|b| async move {
        let began = Instant::now();
        let result = fetch(validator, &b.source, timeout, limit).await;
        (result, millis(began.elapsed()))
    }))
    .await;
    conclude(balancers, reads, reference, millis(started.elapsed()))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The comparison itself, apart from the reading, so that it can be tested on its own.
pub fn conclude(
    balancers: &[Balancer],
    reads: Vec<(Result<Fetched, FetchError>, u64)>,
    reference: Option<&str>,
    elapsed_ms: u64,
) -> Report {
    // A chosen reference that cannot be read gives way to the first that can, rather than
    // leaving everything uncompared.
    let reference_index = reference
        .and_then(|name| {
            balancers
                .iter()
                .zip(&reads)
                .position(|(b, (r, _))| b.name == name && r.is_ok())
        })
        .or_else(|| reads.iter().position(|(r, _)| r.is_ok()));
    let reference_balancing = reference_index
        .and_then(|i| reads.get(i))
        .and_then(|(r, _)| r.as_ref().ok())
        .map(|f| f.balancing.clone());
    let reference_name = reference_index
        .and_then(|i| balancers.get(i))
        .map(|b| b.name.clone());
    let mut out = Vec::with_capacity(balancers.len());
    for (i, (balancer, (read, elapsed))) in balancers.iter().zip(reads).enumerate() {
        let is_reference = Some(i) == reference_index;
        let mut row = BalancerReport {
            name: balancer.name.clone(),
            source: balancer.source.describe(),
            status: "ok",
            hash: None,
            reported_hash: None,
            reference: is_reference,
            agrees: None,
            differences: Vec::new(),
            error: None,
            elapsed_ms: elapsed,
        };
        match read {
            Err(e) => {
                row.status = e.status();
                row.error = Some(e.to_string());
            }
            Ok(fetched) => {
                if let (Some(r), Some(name)) = (&reference_balancing, &reference_name)
                    && !is_reference
                {
                    row.differences = differences(name, r, &balancer.name, &fetched.balancing);
                }
                if let Some(reported) = &fetched.reported_hash {
                    row.differences.extend(reported_hash_difference(
                        &balancer.name,
                        &fetched.balancing.hash,
                        reported,
                    ));
                }
                row.agrees = Some(row.differences.is_empty());
                row.hash = Some(fetched.balancing.hash);
                row.reported_hash = fetched.reported_hash;
            }
        }
        out.push(row);
    }
    let compared = out.iter().filter(|b| b.agrees.is_some()).count();
    let differing = out.iter().filter(|b| b.agrees == Some(false)).count();
    let not_compared = out.len() - compared;
    Report {
        agree: differing == 0 && not_compared == 0 && compared > 0,
        reference: reference_name,
        compared,
        differing,
        not_compared,
        balancers: out,
        elapsed_ms,
    }
}

impl Report {
    /// The table, the differences balancer by balancer, what could not be read, and a
    /// verdict on the last line.
    pub fn render(&self) -> Vec<String> {
        let mut rows = vec![vec![
            "Balancer".to_string(),
            "Source".to_string(),
            "balancing-config-hash".to_string(),
            "Agrees".to_string(),
        ]];
        for b in &self.balancers {
            let agrees = match (b.reference, b.agrees) {
                (true, Some(true)) => "reference".to_string(),
                (true, _) => "reference, NO".to_string(),
                (false, Some(true)) => "yes".to_string(),
                (false, Some(false)) => "NO".to_string(),
                (false, None) => b.status.to_string(),
            };
            rows.push(vec![
                b.name.clone(),
                b.source.clone(),
                b.hash.clone().unwrap_or_else(|| "-".to_string()),
                agrees,
            ]);
        }
        let mut lines = efb_text_table::align(&rows, &[]);
        for b in self.balancers.iter().filter(|b| !b.differences.is_empty()) {
            lines.push(String::new());
            match (&self.reference, b.reference) {
                (Some(r), false) => lines.push(format!("{} differs from {r}:", b.name)),
                _ => lines.push(format!("{}:", b.name)),
            }
            for d in &b.differences {
                lines.push(format!("  {}", d.path));
                lines.push(format!("    {}", d.message));
            }
        }
        let unread: Vec<&BalancerReport> = self
            .balancers
            .iter()
            .filter(|b| b.agrees.is_none())
            .collect();
        if !unread.is_empty() {
            lines.push(String::new());
            for b in unread {
                lines.push(format!(
                    "{}: not compared ({}): {}",
                    b.name,
                    b.status,
                    b.error.as_deref().unwrap_or("")
                ));
            }
        }
        lines.push(String::new());
        lines.push(self.verdict());
        lines
    }

    fn verdict(&self) -> String {
        let reference = self.reference.as_deref().unwrap_or("-");
        let total = self.balancers.len();
        if self.agree && total == 1 {
            return format!("AGREE: {reference} is the only balancer given");
        }
        if self.agree {
            return format!(
                "AGREE: all {total} balancers have the balancing configuration of {reference}"
            );
        }
        let mut parts = Vec::new();
        if self.compared == 0 {
            parts.push("no balancer could be read".to_string());
        } else if self.differing > 0 {
            parts.push(format!(
                "{} of {} balancers read differ{} from {reference}",
                self.differing,
                self.compared,
                if self.differing == 1 { "s" } else { "" }
            ));
        } else if self.compared == 1 {
            parts.push(format!("only {reference} could be read"));
        } else {
            parts.push(format!(
                "the {} balancers read agree with {reference}",
                self.compared
            ));
        }
        if self.not_compared > 0 {
            parts.push(format!("{} could not be compared", self.not_compared));
        }
        format!("DISAGREE: {}", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::difference::{Balancing, DifferenceKind, UnitBalancing};
    use crate::inventory::Source;

    fn balancer(name: &str) -> Balancer {
        Balancer {
            name: name.into(),
            source: Source::File(format!("{name}.json").into()),
        }
    }

    fn read(cores: u16, reported: Option<&str>) -> Result<Fetched, FetchError> {
        let text = format!("method layer-3\nunit u cores {cores}\n");
        Ok(Fetched {
            balancing: Balancing {
                method: "layer-3".into(),
                units: BTreeMap::from([(
                    "u".to_string(),
                    UnitBalancing {
                        cores,
                        rebalance: false,
                        pairs: vec!["p".into()],
                    },
                )]),
                hash: format!("hash{cores}"),
                text,
            },
            reported_hash: reported.map(str::to_string),
        })
    }

    fn down() -> Result<Fetched, FetchError> {
        Err(FetchError::Unreachable {
            address: "h:1".into(),
            message: "connection refused".into(),
        })
    }

    #[test]
    fn all_read_and_equal_agree() {
        let list = [balancer("a"), balancer("b")];
        let report = conclude(
            &list,
            vec![(read(7, None), 1), (read(7, Some("hash7")), 1)],
            None,
            2,
        );
        assert!(report.agree);
        assert_eq!(report.reference.as_deref(), Some("a"));
        assert!(report.render().last().unwrap().starts_with("AGREE"));
    }

    #[test]
    fn one_unread_balancer_does_not_stop_the_others_being_compared() {
        let list = [balancer("a"), balancer("b"), balancer("c")];
        let report = conclude(
            &list,
            vec![(down(), 1), (read(7, None), 1), (read(8, None), 1)],
            None,
            2,
        );
        assert!(!report.agree);
        assert_eq!(report.reference.as_deref(), Some("b"), "the first read");
        assert_eq!(
            (report.compared, report.differing, report.not_compared),
            (2, 1, 1)
        );
        assert_eq!(report.balancers[0].status, "unreachable");
        assert_eq!(
            report.balancers[2].differences[0].kind,
            DifferenceKind::Cores
        );
        let text = report.render().join("\n");
        assert!(text.contains("c differs from b:"), "{text}");
        assert!(text.contains("a: not compared (unreachable)"), "{text}");
        assert!(
            text.ends_with(
                "DISAGREE: 1 of 2 balancers read differs from b; 1 could not be compared"
            ),
            "{text}"
        );
    }

    #[test]
    fn an_unread_balancer_alone_is_enough_to_disagree() {
        let list = [balancer("a"), balancer("b")];
        let report = conclude(&list, vec![(read(7, None), 1), (down(), 1)], None, 2);
        assert!(!report.agree);
        assert_eq!(report.differing, 0);
    }

    #[test]
    fn a_chosen_reference_and_a_reported_hash_mismatch() {
        let list = [balancer("a"), balancer("b")];
        let report = conclude(
            &list,
            vec![(read(7, None), 1), (read(8, Some("other")), 1)],
            Some("b"),
            2,
        );
        assert_eq!(report.reference.as_deref(), Some("b"));
        let b = &report.balancers[1];
        assert_eq!(b.agrees, Some(false), "its own hash is not what it reports");
        assert_eq!(b.differences[0].kind, DifferenceKind::ReportedHash);
        assert_eq!(
            report.balancers[0].differences[0].kind,
            DifferenceKind::Cores
        );
    }
}
