//! `clear ports statistics`, `clear ecofilter-balancer flow statistics`, as Junos's `clear
//! interfaces statistics`: efbd keeps where each counter stood, and every reader (`show`,
//! `monitor`, gNMI) sees the counts since; the chip's counters are not touched.

use efb_mgmt_proto::v1::{Counted, Datastore};

use super::{Output, Result, Shell, fail, wildcard_match};
use crate::grammar::Command;

/// Names listed in the answer at most; more are counted.
const NAMES_SHOWN: usize = 8;

/// Wildcards expand to at most this many names.
const KEY_LIMIT: u32 = 100_000;

impl Shell {
    /// Clears the counters of the entries named (names or `*` patterns; none: all).
    pub(super) fn clear_statistics(
        &mut self,
        command: &Command,
        names: &[String],
    ) -> Result<Output> {
        let list = self.list_path(command)?;
        let (counted, entry) = match list.node().map(|id| self.schema.node(id).name.as_str()) {
            Some("port") => (Counted::Ports, "port"),
            Some("flow") => (Counted::Flows, "flow"),
            _ => return fail(format!("internal: {} clears no counters", command.words)),
        };
        let names = self.expand(command, &list.display(self.schema), names)?;
        let mut cleared = self.client().clear_statistics(counted, names)?;
        cleared.sort_by(|a, b| efb_text_table::natural_cmp(a, b));
        let text = match cleared.len() {
            0 => format!("no {entry} is configured: nothing to clear"),
            n if n <= NAMES_SHOWN => format!("{entry} statistics cleared: {}", cleared.join(", ")),
            n => format!("{entry} statistics cleared: {n} {entry}s"),
        };
        Ok(Output::facts(
            vec![text],
            serde_json::json!({ "cleared": cleared }),
        ))
    }

    /// The names typed, patterns replaced by the configured names they match (each must
    /// match one); names efbd checks itself.
    fn expand(&mut self, command: &Command, list: &str, typed: &[String]) -> Result<Vec<String>> {
        if !typed.iter().any(|n| n.contains('*')) {
            return Ok(typed.to_vec());
        }
        let keys = self
            .client()
            .list_keys(Datastore::Running, list, "", KEY_LIMIT)?
            .keys;
        let mut names = Vec::new();
        for pattern in typed {
            if !pattern.contains('*') {
                names.push(pattern.clone());
                continue;
            }
            let matching: Vec<&String> =
                keys.iter().filter(|k| wildcard_match(pattern, k)).collect();
            if matching.is_empty() {
                return fail(format!(
                    "{}: no entry matches {}; nothing cleared",
                    command.words,
                    efb_yang::text::excerpt(pattern)
                ));
            }
            names.extend(matching.into_iter().cloned());
        }
        Ok(names)
    }
}
