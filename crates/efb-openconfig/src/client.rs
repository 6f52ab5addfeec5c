//! Reading the interfaces back from a server's replies: every update names one leaf of
//! one interface, which [`Interfaces::apply`] writes into that interface.

use std::collections::BTreeMap;

use gnmi_proto::gnmi::Notification;

use crate::encode::decode;
use crate::interface::Interface;
use crate::query::parse_leaf_path;

/// Interfaces by name, as the replies so far told them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interfaces(pub BTreeMap<String, Interface>);

impl Interfaces {
    /// Writes a notification's updates in; deletes of an interface remove it. Returns the
    /// names of the interfaces it changed.
    pub fn apply(&mut self, notification: &Notification) -> Vec<String> {
        let prefix = notification.prefix.as_ref();
        let mut changed = Vec::new();
        for update in &notification.update {
            let (Some(path), Some(value)) = (&update.path, update.val.as_ref().and_then(decode))
            else {
                continue;
            };
            let Some((name, leaf)) = parse_leaf_path(prefix, path) else {
                continue;
            };
            let Some(write) = leaf.write else {
                continue;
            };
            let interface = self.0.entry(name.to_string()).or_insert_with(|| Interface {
                name: name.to_string(),
                ..Interface::default()
            });
            let before = interface.clone();
            if write(interface, &value) && *interface != before {
                changed.push(name.to_string());
            }
        }
        for path in &notification.delete {
            let name = path
                .elem
                .get(1)
                .and_then(|e| e.key.get("name"))
                .filter(|_| path.elem.len() == 2);
            if let Some(name) = name {
                self.0.remove(name);
                changed.push(name.clone());
            }
        }
        changed.sort();
        changed.dedup();
        changed
    }
}
