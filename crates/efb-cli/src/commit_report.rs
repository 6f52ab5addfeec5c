//! What `commit check` and `commit` tell the engineer: the changes (line by line when few,
//! by list when many), whether the balancing-config-hash changes (crossed balancers must
//! follow), what the change does to the sessions flowing now (buckets that move to another
//! filter core), and what the chip is written.

use efb_mgmt_proto::v1::chip_writes::Outcome;
use efb_mgmt_proto::v1::{ChipWrites, CommitReply, TableWrites};
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
    lines.extend(chip(reply));
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

/// What the chip was written (or, for a check, would be), in words.
pub fn chip(reply: &CommitReply) -> Vec<String> {
    let Some(writes) = &reply.chip_writes else {
        return Vec::new();
    };
    match writes.outcome() {
        Outcome::NoChip => Vec::new(),
        Outcome::Written => vec![format!(
            "chip programmed: {} entr{} written",
            writes.entries,
            if writes.entries == 1 { "y" } else { "ies" }
        )],
        Outcome::Offline => {
            vec!["chip NOT programmed (offline commit): out of sync until it reconnects".into()]
        }
        Outcome::Planned => planned(writes),
        Outcome::NotCompiled => vec![format!("chip: cannot compile: {}", writes.not_compiled)],
    }
}

/// `chip: 4 writes`, the writes per table, and each write when there are few.
fn planned(writes: &ChipWrites) -> Vec<String> {
    let mut lines = vec![format!(
        "chip: {} write{}",
        writes.entries,
        if writes.entries == 1 { "" } else { "s" }
    )];
    lines.extend(
        writes
            .tables
            .iter()
            .map(|t| format!("  {}", table_writes(t))),
    );
    lines.extend(
        writes
            .listed
            .iter()
            .map(|w| format!("  {}: {} {}", w.source, w.update, w.table)),
    );
    lines
}

/// `flows_ipv4.flows: 2 inserts`, `link_ports: 1 deletion`.
fn table_writes(t: &TableWrites) -> String {
    let one = match t.update.as_str() {
        "modify" => "modification",
        "delete" => "deletion",
        other => other,
    };
    let plural = if t.count == 1 { "" } else { "s" };
    format!("{}: {} {one}{plural}", t.table, t.count)
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

    fn reply(writes: ChipWrites) -> CommitReply {
        CommitReply {
            chip_writes: Some(writes),
            ..CommitReply::default()
        }
    }

    /// The chip's writes arrive as data; these are the words the shell has for each outcome.
    #[test]
    fn the_chip_writes_in_words() {
        let written = |entries| ChipWrites {
            outcome: Outcome::Written as i32,
            entries,
            ..ChipWrites::default()
        };
        assert_eq!(
            chip(&reply(written(1))),
            ["chip programmed: 1 entry written"]
        );
        assert_eq!(
            chip(&reply(written(12))),
            ["chip programmed: 12 entries written"]
        );
        assert!(chip(&CommitReply::default()).is_empty());
        assert!(chip(&reply(ChipWrites::default())).is_empty(), "no chip");
        let offline = ChipWrites {
            outcome: Outcome::Offline as i32,
            ..ChipWrites::default()
        };
        assert!(chip(&reply(offline))[0].starts_with("chip NOT programmed"));
        let planned = ChipWrites {
            outcome: Outcome::Planned as i32,
            entries: 2,
            tables: vec![
                TableWrites {
                    table: "flows_ipv4.flows".into(),
                    update: "delete".into(),
                    count: 1,
                },
                TableWrites {
                    table: "units".into(),
                    update: "modify".into(),
                    count: 1,
                },
            ],
            listed: vec![efb_mgmt_proto::v1::EntryWrite {
                source: "ecofilter-balancer flow bgp".into(),
                update: "delete".into(),
                table: "flows_ipv4.flows".into(),
            }],
            ..ChipWrites::default()
        };
        assert_eq!(
            chip(&reply(planned)),
            [
                "chip: 2 writes",
                "  flows_ipv4.flows: 1 deletion",
                "  units: 1 modification",
                "  ecofilter-balancer flow bgp: delete flows_ipv4.flows",
            ]
        );
        let refused = ChipWrites {
            outcome: Outcome::NotCompiled as i32,
            not_compiled: "no port 40 on this board".into(),
            ..ChipWrites::default()
        };
        assert_eq!(
            chip(&reply(refused)),
            ["chip: cannot compile: no port 40 on this board"]
        );
    }
}
