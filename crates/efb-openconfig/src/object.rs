//! A subtree of an interface as one JSON object, nested as the model nests it, with member
//! names module-qualified where RFC 7951 (section 4) asks in JSON_IETF: at the top of the
//! value and where a node's module differs from its parent's (`openconfig-if-ethernet:
//! ethernet` under an interface). Plain JSON names no modules.

use serde_json::{Map, Value as Json};

use crate::encode::{Wire, json};
use crate::interface::{Interface, LEAVES, Leaf, module_of};

/// The module of the `interface` list, the parent of every served leaf's first element.
const INTERFACES: &str = "openconfig-interfaces";

/// The object of the node at `below` of `interface` (none: the list entry itself) with the
/// leaves `keep` chooses, or None when it holds none. `top` says the object is the whole
/// value of a reply (its members then carry their module in JSON_IETF).
pub fn object(
    interface: &Interface,
    below: &[String],
    wire: Wire,
    top: bool,
    keep: &impl Fn(&Leaf) -> bool,
) -> Option<Json> {
    let mut root = Map::new();
    for leaf in LEAVES.iter().filter(|l| keep(l)) {
        if !leaf.path.iter().take(below.len()).eq(below.iter()) || leaf.path.len() <= below.len() {
            continue;
        }
        if let Some(value) = (leaf.read)(interface) {
            insert(
                &mut root,
                leaf.path,
                below.len(),
                json(&value, wire),
                wire,
                top,
            );
        }
    }
    (!root.is_empty()).then_some(Json::Object(root))
}

/// The list of every interface's entry, as `/interfaces` holds it.
pub fn entries(interfaces: &[Interface], wire: Wire, keep: &impl Fn(&Leaf) -> bool) -> Json {
    Json::Array(
        interfaces
            .iter()
            .filter_map(|i| object(i, &[], wire, false, keep))
            .collect(),
    )
}

/// The name of the member for `path[depth]` inside an object that starts at `path[start]`.
fn member(path: &[&str], depth: usize, start: usize, wire: Wire, top: bool) -> String {
    let module = module_of(&path[..=depth]);
    let parent = if depth == 0 {
        INTERFACES
    } else {
        module_of(&path[..depth])
    };
    let qualified = wire == Wire::JsonIetf && ((top && depth == start) || module != parent);
    if qualified {
        format!("{module}:{}", path[depth])
    } else {
        path[depth].to_string()
    }
}

fn insert(
    root: &mut Map<String, Json>,
    path: &[&str],
    start: usize,
    value: Json,
    wire: Wire,
    top: bool,
) {
    let mut node = root;
    for depth in start..path.len() - 1 {
        let name = member(path, depth, start, wire, top);
        let child = node.entry(name).or_insert_with(|| Json::Object(Map::new()));
        let Json::Object(map) = child else {
            return;
        };
        node = map;
    }
    let last = path.len() - 1;
    node.insert(member(path, last, start, wire, top), value);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interface::Part;

    fn port() -> Interface {
        Interface {
            name: "p1-0".into(),
            enabled: true,
            oper_up: true,
            ifindex: Some(132),
            mtu: Some(9000),
            speed_gbps: Some(100),
            ..Interface::default()
        }
    }

    fn below(path: &[&str]) -> Vec<String> {
        path.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_container_is_one_object_with_its_members_qualified_at_the_top() {
        let state = object(&port(), &below(&["state"]), Wire::JsonIetf, true, &|_| true);
        let state = state.unwrap_or_default();
        assert_eq!(state["openconfig-interfaces:oper-status"], "UP");
        assert_eq!(state["openconfig-interfaces:mtu"], 9000);
        assert_eq!(
            state["openconfig-interfaces:counters"]["in-octets"], "0",
            "64-bit counters are strings in JSON_IETF, nested members unqualified"
        );
        assert_eq!(
            state["openconfig-interfaces:type"],
            "iana-if-type:ethernetCsmacd"
        );
        assert!(state.get("config").is_none() && state.get("name").is_none());
    }

    #[test]
    fn an_entry_qualifies_only_where_the_module_changes_and_plain_json_never() {
        let entry = object(&port(), &[], Wire::JsonIetf, false, &|_| true).unwrap_or_default();
        assert_eq!(entry["name"], "p1-0");
        assert_eq!(entry["config"]["enabled"], true);
        assert_eq!(
            entry["openconfig-if-ethernet:ethernet"]["state"]["port-speed"],
            "openconfig-if-ethernet:SPEED_100GB"
        );
        let plain = object(&port(), &[], Wire::Json, true, &|_| true).unwrap_or_default();
        assert_eq!(plain["ethernet"]["state"]["port-speed"], "SPEED_100GB");
        assert_eq!(plain["state"]["counters"]["in-octets"], 0);
    }

    #[test]
    fn a_data_type_that_leaves_nothing_gives_no_object() {
        let config_only = |l: &Leaf| l.part == Part::Config;
        assert!(
            object(
                &port(),
                &below(&["state"]),
                Wire::JsonIetf,
                true,
                &config_only
            )
            .is_none()
        );
        let list = entries(&[port(), port()], Wire::Json, &config_only);
        assert_eq!(list.as_array().map(Vec::len), Some(2));
    }
}
