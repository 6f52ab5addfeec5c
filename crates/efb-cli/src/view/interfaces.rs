//! The port inventory (`show interfaces`, Junos's `show interfaces terse`): the board's
//! physical ports and lanes (`/board`) joined with the configured ports (`/ports`), one row
//! per whole port, per lane of a broken-out port and per free physical port.

use efb_text_table::Side;
use serde::Serialize;
use serde_json::Value as Json;

use super::{UNKNOWN, text};

/// One row of the inventory: what a network engineer calls an interface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct Row {
    /// The hardware's name: `p1` (whole or free), `p4-2` (a lane of a broken-out port).
    pub interface: String,
    /// The physical port it is on.
    pub number: u32,
    /// The chip's device ports it stands for: the one a whole port or a lane uses, every
    /// lane's for a free port.
    pub device_ports: Vec<u32>,
    /// The configured port there, if any, and its speed and `enabled`.
    pub configured_as: Option<String>,
    pub speed: Option<String>,
    pub enabled: Option<bool>,
    /// `up` or `down`; absent when the chip could not be read.
    pub oper_status: Option<String>,
    pub used_by: Option<String>,
    /// Absent when not read (no chip, or it could not be read).
    pub counters: Option<Counts>,
}

/// A device port's counters (summed, for a free port's lanes), in [`COUNTERS`] order;
/// `| display json` names them by their leaves, in that order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts(pub [u64; COUNTERS.len()]);

impl Serialize for Counts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(COUNTERS.len()))?;
        for ((leaf, _), value) in COUNTERS.iter().zip(self.0) {
            map.serialize_entry(leaf, &value)?;
        }
        map.end()
    }
}

/// The counters' leaves, in [`Counts`] order, with their column titles.
const COUNTERS: [(&str, &str); 5] = [
    ("in-frames", "In frames"),
    ("in-bytes", "In bytes"),
    ("out-frames", "Out frames"),
    ("out-bytes", "Out bytes"),
    ("in-discards", "In discards"),
];

/// A lane of `/board/port/lane` as the rows need it.
struct Lane<'a> {
    lane: u32,
    device_port: Option<u32>,
    port: Option<&'a str>,
    used_by: Option<&'a str>,
    oper_status: Option<&'a str>,
    counters: Option<Counts>,
}

fn number(value: Option<&Json>) -> Option<u64> {
    value.map(text).and_then(|t| t.parse().ok())
}

fn lane_of(entry: &Json) -> Lane<'_> {
    let counters = entry.get("counters").and_then(|c| {
        let mut values = [0u64; COUNTERS.len()];
        for (value, (leaf, _)) in values.iter_mut().zip(COUNTERS) {
            *value = number(c.get(leaf))?;
        }
        Some(Counts(values))
    });
    Lane {
        lane: number(entry.get("lane"))
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or_default(),
        device_port: number(entry.get("device-port")).and_then(|n| u32::try_from(n).ok()),
        port: entry.get("port").and_then(Json::as_str),
        used_by: entry.get("used-by").and_then(Json::as_str),
        oper_status: entry.get("oper-status").and_then(Json::as_str),
        counters,
    }
}

/// The rows of the board's physical ports (`/board/port` entries), with what the
/// configured ports (`/ports/port` entries) say of speed and `enabled`.
pub fn rows(board: &[Json], ports: &[Json]) -> Vec<Row> {
    let mut rows = Vec::new();
    for port in board {
        let Some(number) = number(port.get("number")).and_then(|n| u32::try_from(n).ok()) else {
            continue;
        };
        let mut lanes: Vec<Lane> = port
            .get("lane")
            .and_then(Json::as_array)
            .map(|a| a.iter().map(lane_of).collect())
            .unwrap_or_default();
        lanes.sort_by_key(|l| l.lane);
        let usage = port.get("usage").and_then(Json::as_str).unwrap_or("free");
        match (usage, lanes.first()) {
            ("whole", Some(first)) => rows.push(row(format!("p{number}"), number, first, ports)),
            ("broken-out", _) => rows.extend(
                lanes
                    .iter()
                    .map(|l| row(format!("p{number}-{}", l.lane), number, l, ports)),
            ),
            _ => rows.push(free(number, &lanes)),
        }
    }
    // In the order of the front panel, whatever order the entries came in.
    rows.sort_by_key(|r| r.number);
    rows
}

/// A whole port or one lane: what its one device port says.
fn row(interface: String, number: u32, lane: &Lane, ports: &[Json]) -> Row {
    let configured = lane.port.and_then(|name| {
        ports
            .iter()
            .find(|p| p.get("name").and_then(Json::as_str) == Some(name))
    });
    Row {
        interface,
        number,
        device_ports: lane.device_port.into_iter().collect(),
        configured_as: lane.port.map(str::to_string),
        speed: configured
            .and_then(|p| p.get("speed"))
            .map(text)
            .filter(|s| !s.is_empty()),
        enabled: configured
            .and_then(|p| p.get("enabled"))
            .and_then(Json::as_bool),
        oper_status: lane.oper_status.map(str::to_string),
        used_by: lane.used_by.map(str::to_string),
        counters: lane.counters,
    }
}

/// A physical port nothing uses: all its lanes together. It is up when a lane is (something
/// is cabled), down when every lane is known down; its counters are the lanes' sums.
fn free(number: u32, lanes: &[Lane]) -> Row {
    let statuses: Vec<Option<&str>> = lanes.iter().map(|l| l.oper_status).collect();
    let oper_status = if statuses.contains(&Some("up")) {
        Some("up")
    } else if !statuses.is_empty() && statuses.iter().all(|s| *s == Some("down")) {
        Some("down")
    } else {
        None
    };
    let counters = lanes.iter().try_fold([0u64; COUNTERS.len()], |mut sum, l| {
        for (total, value) in sum.iter_mut().zip(l.counters?.0) {
            *total = total.saturating_add(value);
        }
        Some(sum)
    });
    Row {
        interface: format!("p{number}"),
        number,
        device_ports: lanes.iter().filter_map(|l| l.device_port).collect(),
        oper_status: oper_status.map(str::to_string),
        counters: counters.filter(|_| !lanes.is_empty()).map(Counts),
        ..Row::default()
    }
}

/// `148-151` for consecutive device ports, else a list.
fn device_ports(ports: &[u32]) -> String {
    let consecutive = ports.windows(2).all(|w| w[1] == w[0] + 1);
    match ports {
        [] => "-".to_string(),
        [one] => one.to_string(),
        [first, .., last] if consecutive => format!("{first}-{last}"),
        _ => ports
            .iter()
            .map(u32::to_string)
            .collect::<Vec<_>>()
            .join(","),
    }
}

fn admin(row: &Row) -> String {
    match row.enabled {
        Some(true) => "up".into(),
        Some(false) => "down".into(),
        None => "-".into(),
    }
}

fn or_unknown(value: &Option<String>) -> String {
    value.clone().unwrap_or_else(|| UNKNOWN.to_string())
}

fn configured_as(row: &Row) -> String {
    row.configured_as.clone().unwrap_or_else(|| "free".into())
}

fn used_by(row: &Row) -> String {
    row.used_by.clone().unwrap_or_else(|| "-".into())
}

/// A column: its title, its side, and what a row shows in it.
type Column = (&'static str, Side, fn(&Row) -> String);

const INVENTORY: [Column; 7] = [
    ("Interface", Side::Left, |r| r.interface.clone()),
    ("Device ports", Side::Left, |r| {
        device_ports(&r.device_ports)
    }),
    ("Speed", Side::Left, |r| {
        r.speed.clone().unwrap_or_else(|| "-".into())
    }),
    ("Admin", Side::Left, admin),
    ("Oper", Side::Left, |r| or_unknown(&r.oper_status)),
    ("Configured as", Side::Left, configured_as),
    ("Used by", Side::Left, used_by),
];

/// `statistics`: the counters beside what names the interface (no wider than a terminal's
/// 120 columns for the one-filter site).
const STATISTICS: [Column; 4] = [
    ("Interface", Side::Left, |r| r.interface.clone()),
    ("Oper", Side::Left, |r| or_unknown(&r.oper_status)),
    ("Configured as", Side::Left, configured_as),
    ("Used by", Side::Left, used_by),
];

fn draw(rows: &[Row], columns: &[Column], counters: bool) -> Vec<String> {
    let mut titles: Vec<String> = columns.iter().map(|(t, _, _)| t.to_string()).collect();
    let mut sides: Vec<Side> = columns.iter().map(|(_, s, _)| *s).collect();
    if counters {
        titles.extend(COUNTERS.iter().map(|(_, t)| t.to_string()));
        sides.extend([Side::Right; COUNTERS.len()]);
    }
    let mut table = vec![titles];
    for row in rows {
        let mut cells: Vec<String> = columns.iter().map(|(_, _, cell)| cell(row)).collect();
        if counters {
            cells.extend(match row.counters {
                Some(counts) => counts.0.map(|v| v.to_string()).to_vec(),
                None => vec![UNKNOWN.to_string(); COUNTERS.len()],
            });
        }
        table.push(cells);
    }
    efb_text_table::align(&table, &sides)
}

/// `show interfaces`.
pub fn inventory(rows: &[Row]) -> Vec<String> {
    draw(rows, &INVENTORY, false)
}

/// `show interfaces statistics`.
pub fn statistics(rows: &[Row]) -> Vec<String> {
    draw(rows, &STATISTICS, true)
}

/// Whether `name` (or `*` pattern) names `row`: its interface, the configured port on it,
/// or its physical port (`p9` names the four lanes of a broken-out p9).
pub fn names(row: &Row, name: &str, matches: impl Fn(&str, &str) -> bool) -> bool {
    matches(name, &row.interface)
        || row
            .configured_as
            .as_deref()
            .is_some_and(|c| matches(name, c))
        || name == format!("p{}", row.number)
}

/// A port name of the board's convention: physical port and lane (`p4-2`: 4, Some(2)).
pub fn parse_port_name(name: &str) -> Option<(u32, Option<u32>)> {
    let rest = name.strip_prefix('p')?;
    let digits = |t: &str| -> Option<u32> {
        (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse().ok())
            .flatten()
    };
    match rest.split_once('-') {
        Some((port, lane)) => Some((digits(port)?, Some(digits(lane)?))),
        None => Some((digits(rest)?, None)),
    }
}

/// Lanes of a physical port (QSFP28: four).
const LANES: u32 = 4;

/// What `name` (physical port `number`, `lane` if any), which no configured port is
/// called, is on the board of `rows` (every row of the inventory).
pub fn unconfigured(name: &str, number: u32, lane: Option<u32>, rows: &[Row]) -> String {
    let here: Vec<&Row> = rows.iter().filter(|r| r.number == number).collect();
    if here.is_empty() || lane.is_some_and(|l| l >= LANES) {
        let first = rows.iter().map(|r| r.number).min().unwrap_or_default();
        let last = rows.iter().map(|r| r.number).max().unwrap_or_default();
        return format!(
            "{name} is not configured, and the board has no such port or lane: its physical ports are p{first} to p{last}, their lanes pN-0 to pN-{} (show interfaces lists them)",
            LANES - 1
        );
    }
    let is_lane = |r: &&&Row| r.interface.contains('-');
    if let Some(whole) = here
        .iter()
        .find(|r| !is_lane(r) && r.configured_as.is_some())
    {
        return in_whole_port(name, number, lane, whole);
    }
    let configured: Vec<&str> = here
        .iter()
        .filter_map(|r| r.configured_as.as_deref())
        .collect();
    let see = format!("see show interfaces p{number}");
    match lane {
        None if !configured.is_empty() => format!(
            "{name} is not configured whole: physical port {number} is broken out, its lanes configured as {}; {see}",
            configured.join(", ")
        ),
        None => format!(
            "{name} is not configured: physical port {number} of the board, lanes 0-{} (device ports {}), free, oper-status {}; {see}",
            LANES - 1,
            device_ports(&here[0].device_ports),
            or_unknown(&here[0].oper_status)
        ),
        Some(l) => free_lane(name, number, l, &here, &configured),
    }
}

/// A name on a physical port a whole port uses.
fn in_whole_port(name: &str, number: u32, lane: Option<u32>, whole: &Row) -> String {
    let port = whole.configured_as.as_deref().unwrap_or_default();
    let what = match lane {
        Some(l) => format!("lane {l} of physical port {number} belongs to"),
        None => format!("physical port {number} is"),
    };
    format!(
        "{name} is not configured: {what} the whole port {port} ({}, device port {}, {}); show ports {port}",
        whole.speed.as_deref().unwrap_or("-"),
        device_ports(&whole.device_ports),
        used_words(whole)
    )
}

/// A lane no port uses, of a physical port free or broken out.
fn free_lane(name: &str, number: u32, lane: u32, here: &[&Row], configured: &[&str]) -> String {
    let row = here
        .iter()
        .find(|r| r.interface == format!("p{number}-{lane}"));
    let (device, status) = match row {
        // Broken out: the lane has its row.
        Some(r) => (
            r.device_ports.first().copied(),
            format!(", oper-status {}", or_unknown(&r.oper_status)),
        ),
        // Free: the lane's device port is the physical port's lane-th; the row's status
        // is the whole port's.
        None => (
            here.first()
                .and_then(|r| r.device_ports.get(lane as usize).copied()),
            String::new(),
        ),
    };
    let device = device.map_or_else(String::new, |d| format!(" (device port {d})"));
    let port = if configured.is_empty() {
        format!(
            "physical port {number} is free: configure {name} as a lane port (number {number} lane {lane}), or p{number} whole"
        )
    } else {
        format!(
            "physical port {number} is broken out, its lanes configured as {}",
            configured.join(", ")
        )
    };
    format!(
        "{name} is not configured: lane {lane} of physical port {number}{device}, free{status}; {port}; see show interfaces p{number}"
    )
}

fn used_words(row: &Row) -> String {
    match &row.used_by {
        Some(users) => format!("used by {users}"),
        None => "unused".into(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lane(lane: u32, device_port: u32, port: Option<&str>, used_by: Option<&str>) -> Json {
        let mut entry = json!({
            "lane": lane,
            "device-port": device_port,
            "oper-status": "up",
            "counters": {"in-frames": "1", "in-bytes": "64", "out-frames": "2",
                         "out-bytes": "128", "in-discards": "0"},
        });
        if let Some(port) = port {
            entry["port"] = json!(port);
        }
        if let Some(users) = used_by {
            entry["used-by"] = json!(users);
        }
        entry
    }

    /// p1 whole (a link's WAN side), p4 broken out (two lanes of a pair), p5 free with no
    /// counters read; not in front-panel order.
    fn board() -> Vec<Json> {
        let whole = Some("p1");
        let link = Some("link l1 wan");
        vec![
            json!({"number": 5, "usage": "free", "lane": [
                {"lane": 0, "device-port": 148, "oper-status": "down"},
                {"lane": 1, "device-port": 149, "oper-status": "down"},
                {"lane": 2, "device-port": 150, "oper-status": "down"},
                {"lane": 3, "device-port": 151, "oper-status": "down"}]}),
            json!({"number": 1, "usage": "whole", "lane": [
                lane(0, 132, whole, link), lane(1, 133, whole, link),
                lane(2, 134, whole, link), lane(3, 135, whole, link)]}),
            json!({"number": 4, "usage": "broken-out", "lane": [
                lane(1, 137, Some("p4-1"), Some("pair u1/pa wan")),
                lane(0, 136, Some("p4-0"), Some("pair u1/pa lan")),
                lane(2, 138, None, None), lane(3, 139, None, None)]}),
        ]
    }

    fn ports() -> Vec<Json> {
        vec![
            json!({"name": "p1", "number": 1, "speed": "100g", "enabled": true}),
            json!({"name": "p4-0", "number": 4, "lane": 0, "speed": "10g", "enabled": false}),
            json!({"name": "p4-1", "number": 4, "lane": 1, "speed": "10g", "enabled": true}),
        ]
    }

    #[test]
    fn a_row_per_whole_port_per_lane_of_a_broken_out_one_and_per_free_port() {
        let rows = rows(&board(), &ports());
        let names: Vec<&str> = rows.iter().map(|r| r.interface.as_str()).collect();
        assert_eq!(names, ["p1", "p4-0", "p4-1", "p4-2", "p4-3", "p5"]);
        assert_eq!(
            inventory(&rows),
            [
                "Interface  Device ports  Speed  Admin  Oper  Configured as  Used by",
                "p1         132           100g   up     up    p1             link l1 wan",
                "p4-0       136           10g    down   up    p4-0           pair u1/pa lan",
                "p4-1       137           10g    up     up    p4-1           pair u1/pa wan",
                "p4-2       138           -      -      up    free           -",
                "p4-3       139           -      -      up    free           -",
                "p5         148-151       -      -      down  free           -",
            ]
        );
        let statistics = statistics(&rows);
        assert_eq!(
            statistics[0],
            "Interface  Oper  Configured as  Used by         In frames  In bytes  Out frames  Out bytes  In discards"
        );
        assert!(statistics[1].ends_with("1        64           2        128            0"));
        assert!(statistics[6].ends_with("unknown   unknown     unknown    unknown      unknown"));
    }

    #[test]
    fn names_select_interfaces_configured_ports_and_physical_ports() {
        let rows = rows(&board(), &ports());
        let exact = |pattern: &str, name: &str| pattern == name;
        let named = |name: &str| -> Vec<String> {
            rows.iter()
                .filter(|r| names(r, name, exact))
                .map(|r| r.interface.clone())
                .collect()
        };
        assert_eq!(named("p4"), ["p4-0", "p4-1", "p4-2", "p4-3"]);
        assert_eq!(named("p4-1"), ["p4-1"]);
        assert_eq!(named("p5"), ["p5"]);
        assert!(named("p6").is_empty());
    }

    #[test]
    fn an_unconfigured_name_says_what_it_is_on_the_board() {
        let rows = rows(&board(), &ports());
        assert_eq!(
            unconfigured("p5", 5, None, &rows),
            "p5 is not configured: physical port 5 of the board, lanes 0-3 (device ports 148-151), free, oper-status down; see show interfaces p5"
        );
        assert_eq!(
            unconfigured("p1-2", 1, Some(2), &rows),
            "p1-2 is not configured: lane 2 of physical port 1 belongs to the whole port p1 (100g, device port 132, used by link l1 wan); show ports p1"
        );
        assert_eq!(
            unconfigured("p4", 4, None, &rows),
            "p4 is not configured whole: physical port 4 is broken out, its lanes configured as p4-0, p4-1; see show interfaces p4"
        );
        assert_eq!(
            unconfigured("p4-3", 4, Some(3), &rows),
            "p4-3 is not configured: lane 3 of physical port 4 (device port 139), free, oper-status up; physical port 4 is broken out, its lanes configured as p4-0, p4-1; see show interfaces p4"
        );
        assert_eq!(
            unconfigured("p5-1", 5, Some(1), &rows),
            "p5-1 is not configured: lane 1 of physical port 5 (device port 149), free; physical port 5 is free: configure p5-1 as a lane port (number 5 lane 1), or p5 whole; see show interfaces p5"
        );
        for (name, number, lane) in [("p33", 33, None), ("p4-4", 4, Some(4))] {
            assert!(
                unconfigured(name, number, lane, &rows).contains(
                    "the board has no such port or lane: its physical ports are p1 to p5, their lanes pN-0 to pN-3"
                ),
                "{name}"
            );
        }
        assert_eq!(parse_port_name("p4-2"), Some((4, Some(2))));
        assert_eq!(parse_port_name("p10"), Some((10, None)));
        assert_eq!(parse_port_name("p-1"), None);
        assert_eq!(parse_port_name("uplink"), None);
    }
}
