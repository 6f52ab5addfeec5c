//! IP protocols by name. The model keeps `ip-proto` a number (uint8, as the chip matches
//! it, and as gNMI clients send it); the shell also takes the names engineers type
//! (`match ip-proto tcp`, `lookup-session ... proto udp`) and turns them into numbers
//! before anything reaches efbd.

use std::borrow::Cow;

use efb_yang::schema::{Schema, SchemaId};
use efb_yang::setlines::{self, Expect, Verb};
use efb_yang::{BaseType, NodeKind};

pub use efb_model::protocols::{ACCEPTED, PROTOCOLS, number};

/// A leaf that holds an IP protocol number: `ip-proto` of a flow's match and of the
/// lookup-session operation.
pub fn is_protocol_leaf(schema: &Schema, id: SchemaId) -> bool {
    let node = schema.node(id);
    node.kind == NodeKind::Leaf
        && node.name == "ip-proto"
        && node
            .leaf_type
            .as_ref()
            .is_some_and(|t| t.base == BaseType::Uint8)
}

/// A protocol leaf given neither a number nor a known name.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{place}: ip-proto \"{word}\" is not a protocol; expected {ACCEPTED}")]
pub struct NotAProtocol {
    /// The leaf's place, as words of a `set` line.
    pub place: String,
    /// The word given, cut to what a message shows.
    pub word: String,
}

/// A `set` or `delete` line (`words`, the verb first) with protocol names turned into
/// numbers: `None` when there was nothing to turn; an error naming the place when a
/// protocol leaf gets neither a number nor a known name.
pub fn numbers_in_line(schema: &Schema, words: &[String]) -> Result<Option<String>, NotAProtocol> {
    let verb = match words.first().map(String::as_str) {
        Some("set") => Verb::Set,
        Some("delete") => Verb::Delete,
        _ => return Ok(None),
    };
    let mut out: Vec<Cow<'_, str>> = words.iter().map(|w| Cow::Borrowed(w.as_str())).collect();
    let mut changed = false;
    for i in 2..words.len() {
        // Only the word after a leaf named like one is worth the parse.
        if words[i - 1] != "ip-proto" {
            continue;
        }
        let Ok(Expect::Value { path, leaf }) = setlines::expect_next(schema, verb, &words[1..i])
        else {
            continue;
        };
        if !is_protocol_leaf(schema, leaf) {
            continue;
        }
        let Some(n) = number(&words[i]) else {
            return Err(NotAProtocol {
                place: setlines::words(schema, &path.parent()),
                word: efb_yang::text::excerpt(&words[i]).into_owned(),
            });
        };
        if n.to_string() != words[i] {
            out[i] = Cow::Owned(n.to_string());
            changed = true;
        }
    }
    Ok(changed.then(|| {
        out.iter()
            .map(|w| setlines::quote_word(w))
            .collect::<Vec<_>>()
            .join(" ")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        setlines::split_words(line).unwrap()
    }

    #[test]
    fn names_and_numbers_of_protocols() {
        assert_eq!(number("tcp"), Some(6));
        assert_eq!(number("UDP"), Some(17));
        assert_eq!(number("132"), Some(132));
        assert_eq!(number("256"), None);
        assert_eq!(number("tcpx"), None);
        assert_eq!(number(""), None);
    }

    #[test]
    fn set_lines_get_numbers_where_a_protocol_goes() {
        let schema = Schema::load().unwrap();
        let line = "set ecofilter-balancer flow dns match ip-proto udp dst-port 53";
        assert_eq!(
            numbers_in_line(&schema, &words(line)).unwrap().as_deref(),
            Some("set ecofilter-balancer flow dns match ip-proto 17 dst-port 53")
        );
        let numbered = "set ecofilter-balancer flow dns match ip-proto 17";
        assert_eq!(numbers_in_line(&schema, &words(numbered)).unwrap(), None);
        // A flow may be named like a protocol: only the value of the leaf is turned.
        let named = "set ecofilter-balancer flow tcp description \"ip-proto tcp\"";
        assert_eq!(numbers_in_line(&schema, &words(named)).unwrap(), None);
        let err = numbers_in_line(
            &schema,
            &words("set ecofilter-balancer flow dns match ip-proto tpc"),
        )
        .unwrap_err();
        assert_eq!(err.word, "tpc");
        assert_eq!(
            err.to_string(),
            format!(
                "ecofilter-balancer flow dns match: ip-proto \"tpc\" is not a protocol; expected {ACCEPTED}"
            )
        );
    }
}
