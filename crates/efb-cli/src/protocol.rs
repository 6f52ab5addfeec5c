//! IP protocols by name. The model keeps `ip-proto` a number (typedef `ip-protocol`, as the
//! chip matches it and gNMI clients send it); set lines take the names engineers type
//! wherever they are read (efb-yang's `Schema::value`), and the shell offers them in
//! completion and turns them into numbers for lookup-session's parameters.

pub use efb_model::protocols::{ACCEPTED, PROTOCOLS, number};

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
