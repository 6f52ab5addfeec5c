//! IP protocols by name. The model keeps `ip-proto` a number (typedef `ip-protocol`, as the
//! chip matches it and gNMI clients send it); set lines take the names engineers type
//! wherever they are read (efb-yang's `Schema::value`), and the shell offers them in
//! completion and turns them into numbers for lookup-session's parameters.

use efb_yang::schema::{Schema, SchemaId};

pub use efb_model::protocols::{ACCEPTED, PROTOCOLS, number};

/// A leaf that holds an IP protocol number: `ip-proto` of a flow's match and of the
/// lookup-session operation (typedef `ip-protocol`).
pub fn is_protocol_leaf(schema: &Schema, id: SchemaId) -> bool {
    schema.is_protocol_leaf(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_numbers_of_protocols() {
        assert_eq!(number("tcp"), Some(6));
        assert_eq!(number("UDP"), Some(17));
        assert_eq!(number("132"), Some(132));
        assert_eq!(number("256"), None);
        assert_eq!(number("tcpx"), None);
        assert_eq!(number(""), None);
    }
}
