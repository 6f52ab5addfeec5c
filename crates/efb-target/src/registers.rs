//! The program's registers: arrays of cells that packets update as they pass (each cell
//! an atomic, because frames run under the shared state lock, as the chip's stateful
//! ALUs update a cell once per packet whatever else runs beside) and that the controller
//! reads and resets over P4Runtime.

use std::sync::atomic::{AtomicU32, Ordering};

use efb_p4info::{P4InfoIndex, RegisterInfo};
use p4runtime_proto::p4::v1::{self as p4, p4_data};

use crate::bytes;
use crate::error::TargetError;

/// Tofino's widest register cell of a single value: 32 bits (wider ones are pairs, which
/// P4Info describes as structs, not bit strings).
pub const MAX_BITWIDTH: u32 = 32;

/// One register: its cells, all 0 when the pipeline is set, as the program declares them.
#[derive(Debug)]
pub struct Register {
    pub name: String,
    pub bitwidth: u32,
    cells: Vec<AtomicU32>,
}

impl Register {
    pub fn new(info: &RegisterInfo) -> Register {
        let size = usize::try_from(info.size).unwrap_or(0);
        Register {
            name: info.name.clone(),
            bitwidth: info.bitwidth,
            cells: (0..size).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    /// Whether the register is the one `info` describes (same name, width and size).
    pub fn fits(&self, info: &RegisterInfo) -> bool {
        self.name == info.name
            && self.bitwidth == info.bitwidth
            && self.cells.len() as u64 == info.size
    }

    pub fn len(&self) -> usize {
        self.cells.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<u32> {
        self.cells.get(index).map(|c| c.load(Ordering::Relaxed))
    }

    /// Every cell's value, in index order.
    pub fn values(&self) -> Vec<u32> {
        self.cells
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }

    /// Sets one cell (an index past the end changes nothing: callers check it first).
    pub fn set(&self, index: usize, value: u32) {
        if let Some(cell) = self.cells.get(index) {
            cell.store(value, Ordering::Relaxed);
        }
    }

    pub fn set_all(&self, value: u32) {
        for cell in &self.cells {
            cell.store(value, Ordering::Relaxed);
        }
    }

    /// Puts back values taken by [`Register::values`].
    pub fn restore(&self, values: &[u32]) {
        for (cell, v) in self.cells.iter().zip(values) {
            cell.store(*v, Ordering::Relaxed);
        }
    }

    /// `if (value > cell) { cell = value; true } else false`, unsigned, in one step (the
    /// RegisterAction `keepalive_newer`): of two packets of one round, one only is newer.
    pub fn raise(&self, index: usize, value: u32) -> bool {
        self.cells.get(index).is_some_and(|cell| {
            cell.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                (value > old).then_some(value)
            })
            .is_ok()
        })
    }

    /// `cell = cell + 1`, wrapping as the chip's 32-bit adder does.
    pub fn increment(&self, index: usize) {
        if let Some(cell) = self.cells.get(index) {
            cell.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The register a write or a read names, by id.
pub fn info(index: &P4InfoIndex, id: u32) -> Result<&RegisterInfo, TargetError> {
    index.register(id).ok_or_else(|| {
        TargetError::not_found(format!(
            "no register has id {id}; the program's registers: {}",
            known(index)
        ))
    })
}

/// The program's registers, by id, for a message about one it lacks.
fn known(index: &P4InfoIndex) -> String {
    let mut all: Vec<&RegisterInfo> = index.registers().collect();
    if all.is_empty() {
        return "none".to_string();
    }
    all.sort_by_key(|r| r.id);
    all.iter()
        .map(|r| format!("{} (id {})", r.name, r.id))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The cell an index names (`None`: every cell), checked against the register's size.
pub fn cell(info: &RegisterInfo, index: Option<&p4::Index>) -> Result<Option<usize>, TargetError> {
    let Some(index) = index else { return Ok(None) };
    usize::try_from(index.index)
        .ok()
        .filter(|i| (*i as u64) < info.size)
        .map(Some)
        .ok_or_else(|| {
            TargetError::out_of_range(format!(
                "register {} has {} cells: index {} is not one of 0..{}",
                info.name,
                info.size,
                index.index,
                info.size.saturating_sub(1)
            ))
        })
}

/// The value a MODIFY writes: a bit string that fits the register's width.
pub fn value(
    info: &RegisterInfo,
    data: Option<&p4::P4Data>,
    canonical: bool,
) -> Result<u32, TargetError> {
    let what = format!("register {} holds bit<{}>", info.name, info.bitwidth);
    match data.and_then(|d| d.data.as_ref()) {
        Some(p4_data::Data::Bitstring(b)) => {
            let checked = bytes::check(b, info.bitwidth, canonical)
                .map_err(|e| e.context(format!("{what}: data")))?;
            u32::try_from(bytes::to_u128(&checked)).map_err(|_| {
                TargetError::out_of_range(format!("{what}: its data does not fit 32 bits"))
            })
        }
        Some(other) => Err(TargetError::invalid(format!(
            "{what}: data must be a bitstring, not {}",
            data_kind(other)
        ))),
        None => Err(TargetError::invalid(format!(
            "{what}: a MODIFY needs data, a bitstring"
        ))),
    }
}

fn data_kind(data: &p4_data::Data) -> &'static str {
    match data {
        p4_data::Data::Bitstring(_) => "a bitstring",
        p4_data::Data::Varbit(_) => "a varbit",
        p4_data::Data::Bool(_) => "a bool",
        p4_data::Data::Tuple(_) => "a tuple",
        p4_data::Data::Struct(_) => "a struct",
        p4_data::Data::Header(_) => "a header",
        p4_data::Data::HeaderUnion(_) => "a header union",
        p4_data::Data::HeaderStack(_) => "a header stack",
        p4_data::Data::HeaderUnionStack(_) => "a header union stack",
        p4_data::Data::Enum(_) => "an enum",
        p4_data::Data::Error(_) => "an error",
        p4_data::Data::EnumValue(_) => "an enum value",
    }
}

/// One cell as reads return it: its value as a canonical bit string.
pub fn entry(register_id: u32, index: usize, value: u32) -> p4::RegisterEntry {
    p4::RegisterEntry {
        register_id,
        index: Some(p4::Index {
            index: i64::try_from(index).unwrap_or(i64::MAX),
        }),
        data: Some(p4::P4Data {
            data: Some(p4_data::Data::Bitstring(bytes::from_u128(u128::from(
                value,
            )))),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn register(size: u64) -> Register {
        Register::new(&RegisterInfo {
            id: 1,
            name: "r".into(),
            bitwidth: 32,
            size,
        })
    }

    #[test]
    fn raise_takes_only_a_greater_value_and_increment_wraps() {
        let r = register(4);
        assert!(r.raise(1, 5));
        assert!(!r.raise(1, 5), "the same value is not newer");
        assert!(!r.raise(1, 4), "nor an older one");
        assert!(r.raise(1, u32::MAX), "unsigned: the top value is newest");
        assert_eq!(r.get(1), Some(u32::MAX));
        assert!(!r.raise(9, 1), "past the end: nothing");
        r.set(2, u32::MAX);
        r.increment(2);
        assert_eq!(r.get(2), Some(0));
    }

    #[test]
    fn concurrent_raises_let_one_packet_of_a_round_through() {
        let r = std::sync::Arc::new(register(1));
        let newer = std::sync::Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (r, newer) = (r.clone(), newer.clone());
                std::thread::spawn(move || {
                    for seq in 1..=1000 {
                        if r.raise(0, seq) {
                            newer.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().ok();
        }
        // Each round is newer once: a read-then-write would count some twice.
        assert_eq!(newer.load(Ordering::Relaxed), 1000);
        assert_eq!(r.get(0), Some(1000));
    }
}
