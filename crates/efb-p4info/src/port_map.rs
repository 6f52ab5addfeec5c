//! The platform's port map: front-panel port and lane -> Tofino device port. Device port
//! numbers are not monotonic in front-panel order, so they are read from the board's
//! file (`p4/port-map.json`), never computed.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use thiserror::Error;

/// The port map of the EcoFilter Balancer's 32-port board, as shipped.
pub const PORT_MAP_JSON: &str = include_str!("../../../p4/port-map.json");

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum PortMapError {
    #[error("port map {0}")]
    Invalid(String),
    #[error("{0:?} is not a port name (p<port> or p<port>-<lane>) nor a device port number")]
    BadName(String),
    #[error("port {0} is not on this platform")]
    Unknown(String),
}

/// A front-panel port, whole (`p10`) or one lane of a broken-out port (`p4-2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PortName {
    pub port: u32,
    pub lane: Option<u32>,
}

impl PortName {
    /// Parses the naming convention of DOMAIN.md.
    pub fn parse(text: &str) -> Result<PortName, PortMapError> {
        let bad = || PortMapError::BadName(text.to_string());
        let rest = text.strip_prefix('p').ok_or_else(bad)?;
        let (port, lane) = match rest.split_once('-') {
            Some((p, l)) => (p, Some(l.parse::<u32>().map_err(|_| bad())?)),
            None => (rest, None),
        };
        Ok(PortName {
            port: port.parse().map_err(|_| bad())?,
            lane,
        })
    }
}

impl fmt::Display for PortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.lane {
            Some(lane) => write!(f, "p{}-{lane}", self.port),
            None => write!(f, "p{}", self.port),
        }
    }
}

#[derive(Deserialize)]
struct File {
    platform: String,
    cpu_port: u32,
    ports: Vec<FilePort>,
}

#[derive(Deserialize)]
struct FilePort {
    port: u32,
    lanes: Vec<u32>,
}

/// The map, both ways.
#[derive(Clone, Debug)]
pub struct PortMap {
    platform: String,
    cpu_port: u32,
    lanes: HashMap<u32, Vec<u32>>,
    names: HashMap<u32, PortName>,
}

impl PortMap {
    /// The shipped map of the 32-port board.
    pub fn builtin() -> Result<PortMap, PortMapError> {
        PortMap::from_json(PORT_MAP_JSON)
    }

    pub fn from_file(path: &Path) -> Result<PortMap, PortMapError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PortMapError::Invalid(format!("{}: {e}", path.display())))?;
        PortMap::from_json(&text)
    }

    pub fn from_json(text: &str) -> Result<PortMap, PortMapError> {
        let file: File =
            serde_json::from_str(text).map_err(|e| PortMapError::Invalid(e.to_string()))?;
        let mut map = PortMap {
            platform: file.platform,
            cpu_port: file.cpu_port,
            lanes: HashMap::new(),
            names: HashMap::new(),
        };
        for p in file.ports {
            map.add(p)?;
        }
        Ok(map)
    }

    fn add(&mut self, p: FilePort) -> Result<(), PortMapError> {
        if p.lanes.is_empty() || self.lanes.contains_key(&p.port) {
            return Err(PortMapError::Invalid(format!(
                "port {} is listed twice or has no lanes",
                p.port
            )));
        }
        for (lane, dev) in (0u32..).zip(&p.lanes) {
            let name = PortName {
                port: p.port,
                lane: Some(lane),
            };
            if *dev >= 512 || *dev == self.cpu_port || self.names.insert(*dev, name).is_some() {
                return Err(PortMapError::Invalid(format!(
                    "device port {dev} of {name} is out of range or used twice"
                )));
            }
        }
        self.lanes.insert(p.port, p.lanes);
        Ok(())
    }

    pub fn platform(&self) -> &str {
        &self.platform
    }

    /// The device port the chip uses to talk to the controller (packet-in / packet-out).
    pub fn cpu_port(&self) -> u32 {
        self.cpu_port
    }

    /// The device port of a front-panel port: lane 0's for a whole port.
    pub fn device_port(&self, name: PortName) -> Result<u32, PortMapError> {
        let lanes = self
            .lanes
            .get(&name.port)
            .ok_or_else(|| PortMapError::Unknown(name.to_string()))?;
        let lane = name.lane.unwrap_or(0);
        usize::try_from(lane)
            .ok()
            .and_then(|l| lanes.get(l))
            .copied()
            .ok_or_else(|| PortMapError::Unknown(name.to_string()))
    }

    /// A name (`p4-2`, `p10`) or a device port number (`137`).
    pub fn resolve(&self, text: &str) -> Result<u32, PortMapError> {
        if let Ok(dev) = text.parse::<u32>() {
            return if self.names.contains_key(&dev) {
                Ok(dev)
            } else {
                Err(PortMapError::Unknown(text.to_string()))
            };
        }
        self.device_port(PortName::parse(text)?)
    }

    /// The front-panel lane behind a device port.
    pub fn name_of(&self, device_port: u32) -> Option<PortName> {
        self.names.get(&device_port).copied()
    }

    /// The names the map has, for a message about one it lacks: `ports are p1..p32,
    /// lanes p1-0..p32-3`.
    pub fn summary(&self) -> String {
        let (Some(first), Some(last)) = (self.lanes.keys().min(), self.lanes.keys().max()) else {
            return "the port map has no ports".to_string();
        };
        let last_lane = self
            .lanes
            .get(last)
            .map_or(0, |l| l.len().saturating_sub(1));
        format!("ports are p{first}..p{last}, lanes p{first}-0..p{last}-{last_lane}")
    }

    /// Every device port of the front panel, ascending.
    pub fn device_ports(&self) -> Vec<u32> {
        let mut ports: Vec<u32> = self.names.keys().copied().collect();
        ports.sort_unstable();
        ports
    }
}
