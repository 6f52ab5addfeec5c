//! gNMI paths against the served leaves: `/interfaces/interface[name=N]/...`, with the
//! origin `openconfig` or none, elements plain or module-qualified
//! (`openconfig-interfaces:interfaces`), `*` for a name or an element, `...` for any
//! number of elements, and a path that stops above a leaf (a subtree).

use gnmi_proto::gnmi;

use crate::interface::{Changes, LEAVES, Leaf, module_of};

/// The origin OpenConfig paths carry.
pub const ORIGIN: &str = "openconfig";

/// The modules of the served leaves, each with the `openconfig-version` of the release
/// they are served as (Capabilities says it): openconfig-interfaces 3.8.0 (revision
/// 2024-12-05) and openconfig-if-ethernet 2.16.0 (2025-11-20), the revisions Google's
/// oc-config-validate 2.10.0 checks against. The leaves served are unchanged in them.
pub const MODULES: [(&str, &str); 2] = [
    ("openconfig-interfaces", "3.8.0"),
    ("openconfig-if-ethernet", "2.16.0"),
];

/// Why a path is refused, in words that say what would be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    #[error(
        "unknown origin {0:?}: OpenConfig paths take origin \"openconfig\" or none \
         (/interfaces/interface[name=NAME]/...)"
    )]
    Origin(String),
    #[error("the prefix's origin {0:?} and the path's origin {1:?} disagree")]
    Origins(String, String),
    #[error(
        "{0} is not a served path: served are /interfaces/interface[name=NAME]/ then \
         name, config/{{name,type,enabled,description,mtu}}, state/{{name,type,enabled,\
         description,mtu,ifindex,admin-status,oper-status,last-change,counters/...}}, \
         ethernet/{{config,state}}/port-speed"
    )]
    NotServed(String),
    #[error("{0}: the only key of interface is name, got {1:?}")]
    Key(String, String),
}

/// A path joined from a request's prefix and path, ready to match leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The origin the client used ("" or "openconfig"), given back in replies.
    pub origin: String,
    /// The interface's name, or None for every interface.
    pub name: Option<String>,
    /// The elements below `interface[name]` (after `interfaces`, `interface`), `*` and `...`
    /// kept as wildcards; empty when the path stops at `interface`.
    below: Vec<String>,
    level: Level,
    text: String,
}

/// Where a path stops in the tree, which decides how a JSON reply nests its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// `/`: the whole tree.
    Root,
    /// `/interfaces`.
    Interfaces,
    /// `interface[name=N]` or a node below it.
    Interface,
    /// `...` before the interface: any leaf anywhere.
    Anywhere,
}

/// The node a path names when it names one node per interface (no wildcard below the
/// interface), which a JSON reply answers as one object.
#[derive(Clone, Copy)]
pub enum Node<'a> {
    /// `/`: `{"openconfig-interfaces:interfaces": {"interface": [...]}}`.
    Root,
    /// `/interfaces`: `{"openconfig-interfaces:interface": [...]}`.
    Interfaces,
    /// A container or list entry at these elements below `interface[name=N]` (none: the
    /// entry itself), one object per interface.
    Container(&'a [String]),
    /// A single leaf of each interface.
    Leaf(&'static Leaf),
}

impl Query {
    /// Joins `prefix` and `path` and checks they name served leaves.
    pub fn new(
        prefix: Option<&gnmi::Path>,
        path: Option<&gnmi::Path>,
    ) -> Result<Query, QueryError> {
        let origin = origin(prefix, path)?;
        let elems: Vec<&gnmi::PathElem> = prefix
            .into_iter()
            .chain(path)
            .flat_map(|p| p.elem.iter())
            .collect();
        let text = display(&elems);
        let names: Vec<&str> = elems.iter().map(|e| unqualified(&e.name)).collect();
        let (name, below, level) = split(&names, &elems, &text)?;
        let query = Query {
            origin,
            name,
            below,
            level,
            text,
        };
        if !LEAVES.iter().any(|leaf| query.matches(leaf)) {
            return Err(QueryError::NotServed(query.text));
        }
        Ok(query)
    }

    /// The path as the client wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The one node the path names, or None when it has wildcards below the interface
    /// (then it names leaves, each answered alone).
    pub fn node(&self) -> Option<Node<'_>> {
        match self.level {
            Level::Root => Some(Node::Root),
            Level::Interfaces => Some(Node::Interfaces),
            Level::Anywhere => None,
            Level::Interface if self.below.iter().any(|e| e == "*" || e == "...") => None,
            Level::Interface => Some(
                match LEAVES.iter().find(|l| l.path.iter().eq(self.below.iter())) {
                    Some(leaf) => Node::Leaf(leaf),
                    None => Node::Container(&self.below),
                },
            ),
        }
    }

    /// The gNMI path of the node `below` of interface `name`, in the client's origin.
    pub fn node_path(&self, name: &str, below: &[String]) -> gnmi::Path {
        let below: Vec<&str> = below.iter().map(String::as_str).collect();
        leaf_path(&self.origin, name, &below)
    }

    /// The gNMI path the client asked, wildcards and all, in the client's origin (what a
    /// reply to `/` or `/interfaces` is answered under).
    pub fn top_path(&self) -> gnmi::Path {
        let elem = match self.level {
            Level::Root => Vec::new(),
            _ => vec![gnmi::PathElem {
                name: "interfaces".into(),
                key: Default::default(),
            }],
        };
        gnmi::Path {
            origin: self.origin.clone(),
            elem,
            ..gnmi::Path::default()
        }
    }

    /// Whether the query covers `leaf` (of the interfaces it names).
    pub fn matches(&self, leaf: &Leaf) -> bool {
        covers(&self.below, leaf.path)
    }

    pub fn names_interface(&self, name: &str) -> bool {
        self.name.as_deref().is_none_or(|n| n == name)
    }

    /// The leaves the query covers.
    pub fn leaves(&self) -> impl Iterator<Item = &'static Leaf> + '_ {
        LEAVES.iter().filter(|leaf| self.matches(leaf))
    }

    /// Whether any covered leaf changes continuously (counters).
    pub fn covers_counters(&self) -> bool {
        self.leaves().any(|l| l.changes == Changes::Continuously)
    }

    /// Whether any covered leaf changes by events.
    pub fn covers_events(&self) -> bool {
        self.leaves().any(|l| l.changes == Changes::OnEvent)
    }

    /// The full gNMI path of `leaf` of interface `name`, in the client's origin.
    pub fn path_of(&self, name: &str, leaf: &Leaf) -> gnmi::Path {
        leaf_path(&self.origin, name, leaf.path)
    }
}

/// The gNMI path of a leaf: `/interfaces/interface[name=N]/<leaf>`.
pub fn leaf_path(origin: &str, name: &str, leaf: &[&str]) -> gnmi::Path {
    let mut elem = vec![
        gnmi::PathElem {
            name: "interfaces".into(),
            key: Default::default(),
        },
        gnmi::PathElem {
            name: "interface".into(),
            key: [("name".to_string(), name.to_string())].into(),
        },
    ];
    elem.extend(leaf.iter().map(|n| gnmi::PathElem {
        name: (*n).into(),
        key: Default::default(),
    }));
    gnmi::Path {
        origin: origin.into(),
        elem,
        ..gnmi::Path::default()
    }
}

/// The interface and the leaf a full leaf path (as a reply carries it) names.
pub fn parse_leaf_path<'a>(
    prefix: Option<&'a gnmi::Path>,
    path: &'a gnmi::Path,
) -> Option<(&'a str, &'static Leaf)> {
    let elems: Vec<&gnmi::PathElem> = prefix
        .into_iter()
        .chain([path])
        .flat_map(|p| p.elem.iter())
        .collect();
    let names: Vec<&str> = elems.iter().map(|e| unqualified(&e.name)).collect();
    if names.len() < 3 || names[0] != "interfaces" || names[1] != "interface" {
        return None;
    }
    let name = elems[1].key.get("name")?;
    let leaf = LEAVES.iter().find(|l| l.path == &names[2..])?;
    Some((name.as_str(), leaf))
}

fn origin(prefix: Option<&gnmi::Path>, path: Option<&gnmi::Path>) -> Result<String, QueryError> {
    let a = prefix.map(|p| p.origin.as_str()).unwrap_or_default();
    let b = path.map(|p| p.origin.as_str()).unwrap_or_default();
    if !a.is_empty() && !b.is_empty() && a != b {
        return Err(QueryError::Origins(a.into(), b.into()));
    }
    let origin = if a.is_empty() { b } else { a };
    if !origin.is_empty() && origin != ORIGIN {
        return Err(QueryError::Origin(origin.into()));
    }
    Ok(origin.into())
}

/// Whether `path` is an OpenConfig interfaces path (what efbd routes here): origin
/// `openconfig`, or no origin and a first element `interfaces`.
pub fn is_openconfig(prefix: Option<&gnmi::Path>, path: Option<&gnmi::Path>) -> bool {
    let origin = prefix
        .map(|p| p.origin.as_str())
        .filter(|o| !o.is_empty())
        .or(path.map(|p| p.origin.as_str()))
        .unwrap_or_default();
    if origin == ORIGIN {
        return true;
    }
    let first = prefix
        .into_iter()
        .chain(path)
        .flat_map(|p| p.elem.iter())
        .next();
    origin.is_empty() && first.is_some_and(|e| unqualified(&e.name) == "interfaces")
}

fn unqualified(name: &str) -> &str {
    match name.split_once(':') {
        Some((module, rest)) if MODULES.iter().any(|(name, _)| *name == module) => rest,
        _ => name,
    }
}

/// The interface name, the elements below `interface` and where the path stops.
fn split(
    names: &[&str],
    elems: &[&gnmi::PathElem],
    text: &str,
) -> Result<(Option<String>, Vec<String>, Level), QueryError> {
    let not_served = || QueryError::NotServed(text.to_string());
    match names {
        [] => Ok((None, Vec::new(), Level::Root)),
        ["..."] => Ok((None, Vec::new(), Level::Anywhere)),
        ["interfaces"] => Ok((None, Vec::new(), Level::Interfaces)),
        ["interfaces", first, rest @ ..] if *first == "interface" || *first == "*" => {
            let elem = elems[1];
            if let Some(other) = elem.key.keys().find(|k| *k != "name") {
                return Err(QueryError::Key(text.to_string(), other.clone()));
            }
            let name = elem.key.get("name").filter(|n| *n != "*").cloned();
            let below = rest.iter().map(|s| s.to_string()).collect();
            Ok((name, below, Level::Interface))
        }
        ["interfaces", "...", ..] | ["...", ..] => Ok((
            None,
            names
                .iter()
                .skip_while(|n| **n != "...")
                .map(|s| s.to_string())
                .collect(),
            Level::Anywhere,
        )),
        _ => Err(not_served()),
    }
}

/// Whether the pattern (with `*` and `...`) covers the leaf path or a node above it.
fn covers(pattern: &[String], leaf: &[&str]) -> bool {
    match (pattern.first().map(String::as_str), leaf.first()) {
        (None, _) => true,
        (Some("..."), _) => (0..=leaf.len()).any(|skip| covers(&pattern[1..], &leaf[skip..])),
        (Some(_), None) => false,
        (Some(p), Some(l)) => (p == "*" || p == *l) && covers(&pattern[1..], &leaf[1..]),
    }
}

fn display(elems: &[&gnmi::PathElem]) -> String {
    if elems.is_empty() {
        return "/".into();
    }
    let mut out = String::new();
    for e in elems {
        out.push('/');
        out.push_str(&e.name);
        for (k, v) in &e.key {
            out.push_str(&format!("[{k}={v}]"));
        }
    }
    out
}

/// The module names of the served leaves, for Capabilities.
pub fn modules() -> Vec<&'static str> {
    let mut out: Vec<&str> = LEAVES.iter().map(|l| module_of(l.path)).collect();
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_model_served_says_its_version() {
        let models = crate::server::models();
        assert_eq!(models.len(), 2);
        for model in models {
            let (major, rest) = model.version.split_once('.').unwrap_or_default();
            assert!(
                major.parse::<u32>().is_ok() && rest.split('.').count() == 2,
                "{model:?}"
            );
        }
    }

    use super::*;

    fn path(origin: &str, text: &str) -> gnmi::Path {
        let elem = text
            .split('/')
            .filter(|s| !s.is_empty())
            .map(|s| match s.split_once('[') {
                Some((name, key)) => {
                    let (k, v) = key
                        .trim_end_matches(']')
                        .split_once('=')
                        .unwrap_or_default();
                    gnmi::PathElem {
                        name: name.into(),
                        key: [(k.to_string(), v.to_string())].into(),
                    }
                }
                None => gnmi::PathElem {
                    name: s.into(),
                    key: Default::default(),
                },
            })
            .collect();
        gnmi::Path {
            origin: origin.into(),
            elem,
            ..gnmi::Path::default()
        }
    }

    fn covered(text: &str) -> Vec<String> {
        let q = Query::new(None, Some(&path("openconfig", text))).unwrap_or_else(|e| panic!("{e}"));
        q.leaves().map(|l| l.path.join("/")).collect()
    }

    #[test]
    fn a_leaf_a_subtree_and_wildcards_cover_what_they_name() {
        assert_eq!(
            covered("/interfaces/interface[name=p1-0]/state/oper-status"),
            ["state/oper-status"]
        );
        let counters = covered("/interfaces/interface[name=*]/state/counters");
        assert_eq!(counters.len(), 16);
        assert!(counters.iter().all(|c| c.starts_with("state/counters/")));
        assert_eq!(covered("/interfaces").len(), crate::interface::LEAVES.len());
        assert_eq!(
            covered("/interfaces/interface/.../port-speed"),
            ["ethernet/config/port-speed", "ethernet/state/port-speed"]
        );
        assert_eq!(
            covered("/interfaces/interface/*/enabled"),
            ["config/enabled", "state/enabled"]
        );
        let qualified = Query::new(
            None,
            Some(&path(
                "",
                "/openconfig-interfaces:interfaces/interface[name=p2]/state/name",
            )),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(qualified.name.as_deref(), Some("p2"));
    }

    #[test]
    fn paths_outside_the_served_leaves_are_refused_saying_what_is_served() {
        for bad in [
            "/interfaces/interface[name=p1]/state/nonsense",
            "/interfaces/interface[name=p1]/subinterfaces",
            "/system",
        ] {
            let err = Query::new(None, Some(&path("", bad))).unwrap_err();
            assert!(
                matches!(&err, QueryError::NotServed(p) if p == bad),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains("oper-status"), "{err}");
        }
        let err = Query::new(None, Some(&path("ecofilter-balancer", "/interfaces"))).unwrap_err();
        assert!(matches!(err, QueryError::Origin(_)), "{err}");
        let err = Query::new(
            Some(&path("openconfig", "")),
            Some(&path("rfc7951", "/interfaces")),
        )
        .unwrap_err();
        assert!(matches!(err, QueryError::Origins(..)), "{err}");
    }

    #[test]
    fn a_reply_path_names_its_interface_and_leaf_back() {
        for leaf in crate::interface::LEAVES {
            let full = leaf_path("openconfig", "p4-2", leaf.path);
            let (name, found) =
                parse_leaf_path(None, &full).unwrap_or_else(|| panic!("{:?}", leaf.path));
            assert_eq!((name, found.path), ("p4-2", leaf.path));
        }
    }

    #[test]
    fn openconfig_paths_are_told_from_the_balancer_model() {
        assert!(is_openconfig(None, Some(&path("openconfig", "/"))));
        assert!(is_openconfig(
            None,
            Some(&path("", "/interfaces/interface"))
        ));
        assert!(is_openconfig(
            Some(&path("openconfig", "")),
            Some(&path("", "/interfaces"))
        ));
        assert!(!is_openconfig(None, Some(&path("", "/ports/port"))));
        assert!(!is_openconfig(
            None,
            Some(&path("ecofilter-balancer", "/ports"))
        ));
    }
}
