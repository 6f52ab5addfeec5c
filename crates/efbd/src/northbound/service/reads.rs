//! Reading a datastore for a request: in the caller's session when it names one, the
//! operational tree off the owner's thread, and list keys and changes as the API answers
//! them.

use efb_datastore::Written;
use efb_mgmt_proto::v1::*;
use efb_yang::inactive::Inactive;
use efb_yang::{DataPath, DataTree, NodeRef, Schema, setlines};
use tonic::Status;

use super::accepted::Which;
use super::{Reader, Service};
use crate::chip::CountersToRead;
use crate::northbound::errors::bounded;
use crate::owner::Request as R;

impl Service {
    /// The operational tree with the counters `wanted` read from the chip, off the owner's
    /// thread (a read of 100 000 flow counters must not hold up commits).
    pub(super) async fn operational(
        &self,
        reader: Reader<'_>,
        method: &'static str,
        wanted: CountersToRead,
    ) -> Result<DataTree, Status> {
        let inputs = self.ask(method, reader, R::StateInputs).await?;
        let schema = self.schema.clone();
        tokio::task::spawn_blocking(move || inputs.tree(&schema, &wanted))
            .await
            .map_err(|e| Status::internal(format!("reading the counters: {e}")))
    }

    /// A datastore as written: its tree and what it keeps inactive (only running and a
    /// candidate keep anything inactive; the operational tree comes without counters).
    pub(super) async fn written(
        &self,
        reader: Reader<'_>,
        method: &'static str,
        which: Which,
    ) -> Result<Written, Status> {
        let session = reader.1;
        let tree = match which {
            Which::Running => return self.ask(method, reader, R::Running).await,
            Which::Candidate => {
                return self
                    .ask_done(method, reader, |to| R::Candidate(session, to))
                    .await;
            }
            Which::Operational => {
                self.operational(reader, method, CountersToRead::NOTHING)
                    .await?
            }
            Which::Startup => self
                .ask_done(method, reader, R::Startup)
                .await?
                .ok_or_else(|| {
                    Status::not_found("no startup configuration: nothing was saved yet")
                })?,
        };
        Ok((tree, Default::default()))
    }

    /// A datastore's tree (what is applied); the operational one without counters.
    pub(super) async fn tree(
        &self,
        reader: Reader<'_>,
        method: &'static str,
        which: Which,
    ) -> Result<DataTree, Status> {
        Ok(self.written(reader, method, which).await?.0)
    }
}

pub(super) fn parse_path(schema: &Schema, text: &str) -> Result<DataPath, Status> {
    if text.trim().is_empty() {
        return Ok(DataPath::root());
    }
    DataPath::parse(schema, text).map_err(|e| bounded(Status::invalid_argument(e.to_string())))
}

pub(super) fn list_keys(
    schema: &Schema,
    tree: &DataTree,
    path: &DataPath,
    prefix: &str,
    limit: usize,
) -> ListKeysReply {
    let Some(NodeRef::List(list)) = tree.get(schema, path) else {
        return ListKeysReply::default();
    };
    // The first `limit` as people count them (p2 before p10), the order the shell lists.
    let mut keys: Vec<&str> = list
        .keys()
        .filter_map(|keys| keys.first())
        .map(|key| key.as_str())
        .filter(|key| key.starts_with(prefix))
        .collect();
    let total = keys.len() as u64;
    keys.sort_by_cached_key(|key| efb_text_table::NaturalKey::of(key));
    keys.truncate(limit);
    ListKeysReply {
        keys: keys.into_iter().map(str::to_string).collect(),
        total,
    }
}

/// One change as a JSON object on its line (`show | compare | display json`): what was
/// done, where (libyang's path and the shell's words), the value and the one it replaced.
pub(super) fn change_json(schema: &Schema, change: &efb_yang::Change) -> String {
    use efb_yang::Change;
    let path = change.path();
    let mut object = serde_json::json!({
        "path": path.display(schema).to_string(),
        "words": setlines::words(schema, path),
    });
    match change {
        Change::Create { .. } => object["operation"] = "create".into(),
        Change::Delete { .. } => object["operation"] = "delete".into(),
        Change::Set { old, new, .. } => {
            object["operation"] = "set".into();
            object["value"] = new.as_str().into();
            if let Some(old) = old {
                object["was"] = old.as_str().into();
            }
        }
    }
    object.to_string()
}

/// What `show | compare` adds for the nodes whose state changed between `old` and `new`
/// inactive nodes: `! inactive: PATH` / `! active: PATH` in the hierarchical form, the
/// `deactivate` / `activate` lines otherwise (one object each in JSON). A node no longer
/// inactive because it was deleted is the diff's delete, not an activation.
pub(super) fn marked_lines(
    schema: &Schema,
    format: Format,
    (old, new): (&Inactive, &Inactive),
    written: &DataTree,
) -> Vec<String> {
    let (deactivated, activated) = Inactive::changes(old, new);
    let activated = activated
        .into_iter()
        .filter(|p| written.contains(schema, p));
    let marked = deactivated
        .into_iter()
        .map(|p| ("deactivate", p))
        .chain(activated.map(|p| ("activate", p)));
    marked
        .map(|(verb, path)| {
            let words = setlines::words(schema, path);
            match format {
                Format::Hierarchy if verb == "deactivate" => format!("! inactive: {words}"),
                Format::Hierarchy => format!("! active: {words}"),
                Format::Json => serde_json::json!({ verb: words }).to_string(),
                _ => format!("{verb} {words}"),
            }
        })
        .collect()
}

/// The set lines of `part` as written, then a `deactivate` line for each inactive node.
pub(super) fn written_lines(
    schema: &Schema,
    part: &DataTree,
    inactive: &[&DataPath],
) -> Vec<String> {
    let deactivated = inactive
        .iter()
        .map(|p| format!("deactivate {}", setlines::words(schema, p)));
    setlines::render_tree(schema, part)
        .into_iter()
        .chain(deactivated)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_as_people_count_them_before_the_limit_cuts() {
        let schema = Schema::load().unwrap();
        let mut tree = DataTree::new();
        let lines = ["p10", "p2", "p1", "p9-0"]
            .map(|p| format!("set ports port {p} description x"))
            .join("\n");
        setlines::apply_lines(&schema, &mut tree, &lines).unwrap();
        let ports = DataPath::parse(&schema, "/ecofilter-balancer:ports/port").unwrap();
        let reply = list_keys(&schema, &tree, &ports, "p", 3);
        assert_eq!(reply.keys, ["p1", "p2", "p9-0"]);
        assert_eq!(reply.total, 4);
    }
}
