//! `show interfaces [NAME...] [statistics]`, the port inventory (Junos's `show interfaces
//! terse`): the board as efbd knows it (`/board`, its status and counters read now) joined
//! with the configured ports; and what a port name that no configured port has is on the
//! board, for `show ports p5`.

use efb_mgmt_proto::v1::{Datastore, Format};
use efb_yang::DataPath;
use serde_json::Value as Json;

use super::{Output, Result, Shell, ShellError, fail, wildcard_match};
use crate::grammar::{Command, Inventory, Render};
use crate::view::interfaces::{self, Row};
use crate::view::{self};

/// The configured ports: their speed and `enabled`, and the list `show ports` reads.
pub(super) const PORTS: &str = "/ecofilter-balancer:ports/port";

/// The board's physical ports, when the grammar does not say (`show ports p5`).
const BOARD: &str = "/ecofilter-balancer:board/port";

impl Shell {
    pub(super) fn show_interfaces(&mut self, command: &Command, rest: &[String]) -> Result<Output> {
        let switched = rest.split_last().and_then(|(last, before)| {
            let view = command.switches.get(last)?;
            Some((Some(view), before))
        });
        let (drawing, names) = switched.unwrap_or((command.render.as_ref(), rest));
        let board = command.get.as_ref().map_or(BOARD, |g| g.path.as_str());
        let rows = selected(command, self.inventory(board)?, names)?;
        let lines = match drawing {
            Some(Render::Inventory(Inventory::InterfaceStatistics)) => {
                interfaces::statistics(&rows)
            }
            _ => interfaces::inventory(&rows),
        };
        let data = serde_json::to_value(&rows)
            .map_err(|e| ShellError(format!("the inventory as JSON: {e}")))?;
        Ok(Output::facts(
            lines,
            serde_json::json!({ "interfaces": data }),
        ))
    }

    /// Every row of the inventory, the board's status and counters read now.
    fn inventory(&self, board: &str) -> Result<Vec<Row>> {
        let board = self.entries(Datastore::Operational, board)?;
        // Speed and `enabled` are configuration: running has them, defaults included.
        let ports = self.entries(Datastore::Running, PORTS)?;
        Ok(interfaces::rows(&board, &ports))
    }

    /// The entries of the list at `path`, none when it has none.
    fn entries(&self, datastore: Datastore, path: &str) -> Result<Vec<Json>> {
        let at = DataPath::parse(self.schema, path).map_err(|e| ShellError(e.to_string()))?;
        let text = self
            .client()
            .get(datastore, &at.display(self.schema), Format::Json, true)?;
        let answer: Json = serde_json::from_str(&text)
            .map_err(|e| ShellError(format!("efbd sent bad JSON: {e}")))?;
        let names = view::member_names(self.schema, &at);
        Ok(view::at(&answer, &names)
            .and_then(Json::as_array)
            .cloned()
            .unwrap_or_default())
    }

    /// Why `show LIST NAME` finds nothing. For a port named as the board names its ports
    /// and lanes (`p5`, `p4-2`), what that is on the board: free, a lane of a broken-out
    /// port, part of a whole port, or not there at all.
    pub(super) fn no_such_entry(
        &self,
        command: &Command,
        list: &DataPath,
        name: &str,
    ) -> ShellError {
        let plain = ShellError(format!(
            "{} {}: no such entry",
            command.words,
            efb_yang::text::excerpt(name)
        ));
        let Some((number, lane)) = interfaces::parse_port_name(name) else {
            return plain;
        };
        if list.display(self.schema) != PORTS {
            return plain;
        }
        match self.inventory(BOARD) {
            Ok(rows) => ShellError(interfaces::unconfigured(name, number, lane, &rows)),
            Err(_) => plain,
        }
    }
}

/// The rows `names` name (none named: all); each name or pattern must find one.
fn selected(command: &Command, rows: Vec<Row>, names: &[String]) -> Result<Vec<Row>> {
    let named = |row: &Row, name: &str| interfaces::names(row, name, wildcard_match);
    for name in names {
        if rows.iter().any(|r| named(r, name)) {
            continue;
        }
        let shown = efb_yang::text::excerpt(name);
        return fail(if name.contains('*') {
            format!("{}: no interface matches {shown}", command.words)
        } else {
            format!(
                "{} {shown}: no such interface; interfaces are the physical ports (p1), their lanes when broken out (p4-2), or a configured port's name",
                command.words
            )
        });
    }
    Ok(rows
        .into_iter()
        .filter(|r| names.is_empty() || names.iter().any(|n| named(r, n)))
        .collect())
}
