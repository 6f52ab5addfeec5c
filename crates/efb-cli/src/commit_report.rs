//! What `commit check` and `commit` tell the engineer: the changes (line by line when few,
//! by list when many), whether the balancing-config-hash changes (crossed balancers must
//! follow), what the change does to the sessions flowing now (buckets that move to another
//! filter core), and what the chip is written.

use efb_mgmt_proto::v1::CommitReply;
use efb_yang::text::grouped;

/// Change lines shown one by one; more are summarised by list.
const LISTED_CHANGES: usize = 20;

/// The report of `commit check`.
pub fn check(reply: &CommitReply) -> Vec<String> {
    let mut lines = vec![format!(
        "configuration check succeeds (validated: {})",
        reply.validation_scope
    )];
    lines.extend(changes(reply));
    lines.extend(consequences(reply, Mood::Check));
    lines.extend(reply.chip.iter().cloned());
    lines
}

/// A check says what would happen; a commit what happened.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mood {
    Check,
    Commit,
}

/// What a commit did (or a check would do) to balancing.
pub fn consequences(reply: &CommitReply, mood: Mood) -> Vec<String> {
    let (change, moves) = match mood {
        Mood::Check => ("would change", "would move"),
        Mood::Commit => ("changed", "moved"),
    };
    let mut lines = Vec::new();
    if reply.config_hash_before.is_empty() {
        return lines;
    }
    if reply.config_hash_before == reply.config_hash_after {
        lines.push(format!(
            "balancing-config-hash unchanged ({})",
            reply.config_hash_after
        ));
    } else {
        lines.push(format!(
            "balancing-config-hash {change}: {} -> {}; crossed balancers must get the same change",
            reply.config_hash_before, reply.config_hash_after
        ));
    }
    // Only a check works out where flows send traffic (a commit does not pay for it): a
    // commit speaks of buckets alone.
    match mood {
        _ if !reply.moves.is_empty() || !reply.consequences.is_empty() => {}
        Mood::Check => lines.push(
            "traffic: no bucket moves, no traffic to another destination; sessions stay on their filter cores"
                .into(),
        ),
        Mood::Commit => lines.push("traffic: no bucket moves".into()),
    }
    lines.extend(reply.consequences.iter().map(|c| format!("traffic: {c}")));
    for m in &reply.moves {
        let percent = match (m.moved * 100).checked_div(m.buckets) {
            Some(0) if m.moved > 0 => 1,
            Some(p) => p,
            None => 0,
        };
        let why = if m.why.is_empty() {
            String::new()
        } else {
            format!(": {}", m.why.join(", "))
        };
        lines.push(format!(
            "traffic: {}: {} of {} buckets {moves} ({percent} %){why}",
            m.unit,
            grouped(m.moved as usize),
            grouped(m.buckets as usize),
        ));
    }
    lines
}

/// `1 change`, `2 033 changes`: the set / delete lines, as efbd counts them everywhere.
pub fn counted_changes(total: u64) -> String {
    format!(
        "{} change{}",
        grouped(total as usize),
        if total == 1 { "" } else { "s" }
    )
}

fn changes(reply: &CommitReply) -> Vec<String> {
    let total = reply.change_lines_total as usize;
    let mut lines = vec![format!(
        "{}{}",
        counted_changes(reply.changes),
        if total == 0 { "" } else { ":" }
    )];
    if total <= LISTED_CHANGES {
        lines.extend(reply.change_lines.iter().map(|l| format!("  {l}")));
    } else {
        lines.extend(reply.change_summary.iter().map(|l| format!("  {l}")));
        lines.push("  (show | compare lists every line)".into());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A commit does not work out where flows send traffic, so it claims nothing of it.
    #[test]
    fn only_a_check_says_no_traffic_goes_elsewhere() {
        let reply = CommitReply {
            config_hash_before: "a".into(),
            config_hash_after: "a".into(),
            ..CommitReply::default()
        };
        let check = consequences(&reply, Mood::Check);
        let commit = consequences(&reply, Mood::Commit);
        assert!(
            check[1].contains("no traffic to another destination"),
            "{check:?}"
        );
        assert_eq!(commit[1], "traffic: no bucket moves");
    }
}
