//! What may follow the words of an operational command: the names of the entries a `get`
//! lists (live from the daemon; the board's ports for `show interfaces`), an operation's
//! parameters and their values, a commit's id.

use efb_yang::schema::Schema;
use efb_yang::setlines::Verb;

use super::{Candidate, Completer, end, first_sentence, help_topics};
use crate::grammar::{Builtin, Command};

impl Completer<'_> {
    pub(super) fn operational(&self, words: &[String]) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = self
            .grammar
            .next_words(words)
            .into_iter()
            .map(|(w, h)| Candidate::word(w, h))
            .collect();
        if let Some((command, rest)) = self.grammar.find(words) {
            out.extend(self.command_arguments(command, rest));
        }
        out
    }

    fn command_arguments(&self, command: &Command, rest: &[String]) -> Vec<Candidate> {
        if let Some(get) = &command.get {
            let switched = rest
                .last()
                .is_some_and(|w| command.switches.contains_key(w));
            let mut out = Vec::new();
            if !switched && let Some(arg) = &get.arg {
                if command.is_inventory() {
                    out.extend(self.interface_names(arg, rest));
                } else {
                    out.extend(self.list_keys(&get.path, arg, rest));
                }
            }
            if !switched {
                out.extend(
                    command
                        .switches
                        .keys()
                        .map(|w| Candidate::word(w.clone(), "Show another view of the same")),
                );
            }
            out.extend(end());
            return out;
        }
        if let Some(rpc) = &command.rpc {
            return self.rpc_params(rpc, command, rest);
        }
        match command.builtin {
            Some(Builtin::ShowConfiguration) => self.paths(Verb::Delete, rest),
            Some(Builtin::Help) => help_topics(rest),
            Some(Builtin::History) if rest.is_empty() => self.commit_ids(),
            Some(Builtin::Rollback) if rest.len() == 1 => {
                vec![Candidate::word("compare", "Compare with another commit")]
            }
            Some(Builtin::Rollback) if rest.is_empty() || rest.len() == 2 => {
                self.rollback_numbers()
            }
            Some(Builtin::ScreenLength) if rest.is_empty() => vec![Candidate::placeholder(
                "<lines>",
                "Lines a page holds; 0: no paging",
            )],
            _ if rest.is_empty() => end(),
            _ => Vec::new(),
        }
    }

    /// The ids `show system commit` takes, newest first, each with what it was.
    fn commit_ids(&self) -> Vec<Candidate> {
        let Some(commits) = self.keys.history() else {
            return vec![Candidate::placeholder("<id>", "A commit's id")];
        };
        let mut ids: Vec<Candidate> = commits
            .into_iter()
            .map(|c| {
                Candidate::word(
                    c.id.to_string(),
                    format!("rollback {}: {}", c.rollback, c.said),
                )
            })
            .collect();
        ids.extend(end());
        ids
    }

    /// Names for `show ... NAME...`: those not given yet.
    fn list_keys(&self, list_path: &str, arg: &str, given: &[String]) -> Vec<Candidate> {
        let mut out = vec![Candidate::placeholder(
            format!("<{}>", arg.to_lowercase()),
            "Show only these: names, or patterns with * (p9*)",
        )];
        out.extend(
            self.keys_at(list_path, "")
                .into_iter()
                .filter(|k| !given.contains(k))
                .map(|k| Candidate::word(k, "")),
        );
        out
    }

    /// Names for `show interfaces NAME...`: the board's physical ports (their numbers from
    /// the model) and the configured ports, those not given yet.
    fn interface_names(&self, arg: &str, given: &[String]) -> Vec<Candidate> {
        let mut names: Vec<String> = board_numbers(self.schema)
            .into_iter()
            .map(|n| format!("p{n}"))
            .collect();
        names.extend(self.keys_at("/ecofilter-balancer:ports/port", ""));
        names.sort_by(|a, b| efb_text_table::natural_cmp(a, b));
        names.dedup();
        let mut out = vec![Candidate::placeholder(
            format!("<{}>", arg.to_lowercase()),
            "Show only these: physical ports (p4: all its lanes), lanes (p4-2), configured ports, or patterns with *",
        )];
        out.extend(
            names
                .into_iter()
                .filter(|n| !given.contains(n))
                .map(|n| Candidate::word(n, "")),
        );
        out
    }

    /// Parameters of an RPC command: a parameter word, or the value of the last one.
    fn rpc_params(&self, rpc: &str, command: &Command, rest: &[String]) -> Vec<Candidate> {
        let Ok((_, Some(input), _)) = efb_yang::rpc::operation(self.schema, rpc) else {
            return Vec::new();
        };
        let leaf_of = |word: &str| {
            command
                .params
                .iter()
                .find(|p| p.word == word)
                .and_then(|p| self.schema.child(input, &p.leaf))
        };
        // Words go in pairs: parameter, value.
        if rest.len() % 2 == 1
            && let Some(leaf) = rest.last().and_then(|w| leaf_of(w))
        {
            return self.values(leaf);
        }
        let given: Vec<&String> = rest.iter().step_by(2).collect();
        let mut out: Vec<Candidate> = command
            .params
            .iter()
            .filter(|p| !given.contains(&&p.word))
            .filter_map(|p| {
                let leaf = self.schema.child(input, &p.leaf)?;
                let node = self.schema.node(leaf);
                let mut help = first_sentence(&node.description);
                if node.mandatory {
                    help.push_str(" (required)");
                }
                Some(Candidate::word(p.word.clone(), help))
            })
            .collect();
        let missing_required = command.params.iter().any(|p| {
            !given.contains(&&p.word)
                && self
                    .schema
                    .child(input, &p.leaf)
                    .is_some_and(|l| self.schema.node(l).mandatory)
        });
        if !missing_required {
            out.extend(end());
        }
        out
    }
}

/// The numbers of the board's physical ports: the range of `/board/port/number`.
fn board_numbers(schema: &Schema) -> Vec<u32> {
    let range = schema
        .find("/board/port/number")
        .and_then(|id| schema.node(id).leaf_type.as_ref()?.range.clone());
    let bounds = range.as_deref().and_then(|r| {
        let (low, high) = r.split_once("..")?;
        Some((low.trim().parse().ok()?, high.trim().parse().ok()?))
    });
    bounds.map_or_else(Vec::new, |(low, high)| (low..=high).collect())
}
