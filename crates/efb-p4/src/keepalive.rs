//! Keep-alive rounds on the chip (p4/efb.p4, PIPELINE.md): every unit probed by a liveness
//! profile has a multicast group, numbered by its chip unit id, with a replica out of each
//! port of each of its pairs: one packet-out to the group is a round. The chip writes into
//! each copy the port it leaves by, and counts what comes back in registers by that port,
//! which [`RoundReader`] reads.

use std::collections::BTreeMap;

use efb_liveness::{Records, Returned, Wanted};
use efb_model::{Config, paths};
use efb_p4info::names::registers as r;
use efb_p4info::{P4InfoError, P4InfoIndex};
use p4runtime_proto::p4::v1 as p4;

use crate::client::{ClientError, Reader};
use crate::compile::Compiler;
use crate::ids::Ids;

/// A copy of a round: device port and instance (0: each port is in a group once).
pub type Replica = (u32, u32);
/// Multicast group id -> its replicas, sorted.
pub type Groups = BTreeMap<u32, Vec<Replica>>;

impl Compiler {
    /// The multicast groups the chip should hold for `config`: one per unit with a
    /// liveness profile, none for a unit without a pair on the chip.
    pub fn keepalive_groups(&self, config: &Config, ids: &Ids) -> Groups {
        let mut groups = Groups::new();
        for unit in config.units.values() {
            let probed =
                (unit.liveness_profile.as_ref()).is_some_and(|p| config.profiles.contains_key(p));
            let Some(unit_id) = ids.unit(&unit.name).filter(|_| probed) else {
                continue;
            };
            let mut replicas = Vec::new();
            for pair in &unit.pairs {
                if ids.pair(&unit.name, &pair.name).is_none() {
                    continue;
                }
                let path = paths::pair(&unit.name, &pair.name);
                for port in [&pair.lan_port, &pair.wan_port] {
                    if let Ok(device) = self.device_port(config, &path, port) {
                        replicas.push((device, 0));
                    }
                }
            }
            if !replicas.is_empty() {
                replicas.sort_unstable();
                groups.insert(unit_id, replicas);
            }
        }
        groups
    }
}

/// The writes that make a chip holding `held` hold `wanted`.
pub fn group_updates(held: &Groups, wanted: &Groups) -> Vec<p4::Update> {
    use p4::update::Type;
    let mut updates = Vec::new();
    for (id, replicas) in held {
        if !wanted.contains_key(id) {
            updates.push(group_update(Type::Delete, *id, replicas));
        }
    }
    for (id, replicas) in wanted {
        match held.get(id) {
            None => updates.push(group_update(Type::Insert, *id, replicas)),
            Some(old) if old != replicas => updates.push(group_update(Type::Modify, *id, replicas)),
            Some(_) => {}
        }
    }
    updates
}

fn group_update(kind: p4::update::Type, id: u32, replicas: &[Replica]) -> p4::Update {
    p4::Update {
        r#type: kind as i32,
        entity: Some(group_entity(id, replicas)),
    }
}

/// Replicas name their port by the integer `egress_port`, deprecated by P4Runtime 1.4 in
/// favour of bytes for SDN port translation, which Stratum on Tofino does not do: it reads
/// the integer, as efb-target does.
#[allow(deprecated)]
fn group_entity(id: u32, replicas: &[Replica]) -> p4::Entity {
    let replicas = replicas
        .iter()
        .map(|&(port, instance)| p4::Replica {
            port_kind: Some(p4::replica::PortKind::EgressPort(port)),
            instance,
        })
        .collect();
    p4::Entity {
        entity: Some(p4::entity::Entity::PacketReplicationEngineEntry(
            p4::PacketReplicationEngineEntry {
                r#type: Some(
                    p4::packet_replication_engine_entry::Type::MulticastGroupEntry(
                        p4::MulticastGroupEntry {
                            multicast_group_id: id,
                            replicas,
                        },
                    ),
                ),
            },
        )),
    }
}

/// The groups a read found (replicas by the integer port; any other form is not ours).
#[allow(deprecated)]
pub fn groups_read(entries: Vec<p4::MulticastGroupEntry>) -> Groups {
    entries
        .into_iter()
        .map(|g| {
            let mut replicas: Vec<Replica> = (g.replicas.iter())
                .filter_map(|r| match r.port_kind {
                    Some(p4::replica::PortKind::EgressPort(port)) => Some((port, r.instance)),
                    _ => None,
                })
                .collect();
            replicas.sort_unstable();
            (g.multicast_group_id, replicas)
        })
        .collect()
}

/// The keep-alive registers' ids in the P4Info.
#[derive(Clone, Copy, Debug)]
pub struct RegisterIds {
    seq: u32,
    returns: u32,
    path: u32,
    rounds: u32,
    copies: u32,
    counted: u32,
}

impl RegisterIds {
    pub fn of(index: &P4InfoIndex) -> Result<RegisterIds, P4InfoError> {
        let id = |name| index.register_by_name(name).map(|info| info.id);
        Ok(RegisterIds {
            seq: id(r::KEEPALIVE_SEQ)?,
            returns: id(r::KEEPALIVE_RETURNS)?,
            path: id(r::KEEPALIVE_PATH)?,
            rounds: id(r::KEEPALIVE_ROUNDS)?,
            copies: id(r::KEEPALIVE_COPIES)?,
            counted: id(r::KEEPALIVE_COUNTED)?,
        })
    }

    /// What a read of the keep-alive registers says, and the cells whose count moved
    /// between its two reads (torn: a return came in between).
    fn records(&self, read: impl Iterator<Item = (u32, u32, u32)>) -> (Records, Vec<u16>) {
        let mut records = Records::default();
        let mut torn = Vec::new();
        for (register, index, value) in read {
            if register == self.rounds {
                if let Ok(unit) = u8::try_from(index) {
                    records.rounds.insert(unit, value);
                }
                continue;
            }
            if register == self.copies || register == self.counted {
                let Ok(unit) = u8::try_from(index >> 1) else {
                    continue;
                };
                let tally = &mut records.tallies.entry(unit).or_default()[(index & 1) as usize];
                if register == self.copies {
                    tally.copies = value;
                } else {
                    tally.counted = value;
                }
                continue;
            }
            let Ok(cell) = u16::try_from(index) else {
                continue;
            };
            let seen = records.returns.contains_key(&cell);
            let returned: &mut Returned = records.returns.entry(cell).or_default();
            match register {
                r if r == self.seq => returned.newest = value,
                // Read again after the newest: a return came in between when it moved.
                r if r == self.returns && seen && returned.count != value => torn.push(cell),
                r if r == self.returns => returned.count = value,
                r if r == self.path => returned.path_ns = value,
                _ => {}
            }
        }
        (records, torn)
    }
}

/// Reads what the chip recorded of keep-alive rounds, on the connection's channel but
/// without holding the connection.
#[derive(Clone, Debug)]
pub struct RoundReader {
    pub(crate) reader: Reader,
    pub(crate) ids: RegisterIds,
}

impl RoundReader {
    /// Whether both read on the same connection (a new one means a chip that may have
    /// restarted).
    pub fn same_connection(&self, other: &RoundReader) -> bool {
        self.reader.same_channel(&other.reader)
    }

    /// One Read of what `wanted` names: per unit its newest round entered, then its
    /// tallies (returns before copies: a round entering meanwhile makes them differ, never
    /// agree), per cell what came back. A cell's count is read before and after its newest
    /// round (the arrival time is left for diagnostics: not read); when the two differ, a
    /// return came in between and the whole read is made again (a torn cell could make
    /// the engine count a returned round as lost), at most [`TORN_READS`] times; after
    /// that the torn cells are left out (the engine reads them again).
    pub async fn read(&self, wanted: &Wanted) -> Result<Records, ClientError> {
        let mut attempts = 1;
        loop {
            let (mut records, torn) = self.read_once(wanted).await?;
            if torn.is_empty() || attempts == TORN_READS {
                for cell in torn {
                    records.returns.remove(&cell);
                }
                return Ok(records);
            }
            tracing::debug!(cells = ?torn, "torn read of keep-alive records: read again");
            attempts += 1;
        }
    }

    async fn read_once(&self, wanted: &Wanted) -> Result<(Records, Vec<u16>), ClientError> {
        let ids = self.ids;
        let mut entities: Vec<p4::Entity> = Vec::new();
        for unit in &wanted.units {
            let unit = u32::from(*unit);
            entities.push(register_entity(ids.rounds, Some(unit)));
            for register in [ids.counted, ids.copies] {
                for parity in 0..2 {
                    entities.push(register_entity(register, Some(unit << 1 | parity)));
                }
            }
        }
        for cell in &wanted.cells {
            for register in [ids.returns, ids.seq, ids.path, ids.returns] {
                entities.push(register_entity(register, Some(u32::from(*cell))));
            }
        }
        Ok(ids.records(cells(self.reader.read(entities).await?)))
    }

    /// The newest round number the chip holds anywhere: efbd numbers its rounds above it.
    pub async fn newest_round(&self) -> Result<u32, ClientError> {
        let entities = vec![
            register_entity(self.ids.rounds, None),
            register_entity(self.ids.seq, None),
        ];
        let read = self.reader.read(entities).await?;
        Ok(cells(read).map(|(_, _, value)| value).max().unwrap_or(0))
    }
}

/// How many times a torn read is made before the torn cells are left out.
pub const TORN_READS: usize = 3;

fn register_entity(register_id: u32, index: Option<u32>) -> p4::Entity {
    p4::Entity {
        entity: Some(p4::entity::Entity::RegisterEntry(p4::RegisterEntry {
            register_id,
            index: index.map(|i| p4::Index {
                index: i64::from(i),
            }),
            data: None,
        })),
    }
}

/// (register, index, value) of each register cell read; a value wider than 32 bits or an
/// entry that is not a register cell is not the program's, and skipped.
fn cells(entities: Vec<p4::Entity>) -> impl Iterator<Item = (u32, u32, u32)> {
    entities.into_iter().filter_map(|entity| {
        let Some(p4::entity::Entity::RegisterEntry(entry)) = entity.entity else {
            return None;
        };
        let index = u32::try_from(entry.index?.index).ok()?;
        let Some(p4::p4_data::Data::Bitstring(bytes)) = entry.data?.data else {
            return None;
        };
        if bytes.len() > 4 && bytes[..bytes.len() - 4].iter().any(|b| *b != 0) {
            return None;
        }
        let value = bytes.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b));
        Some((entry.register_id, index, value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_written_by_difference() {
        let held = Groups::from([(1, vec![(2, 0), (3, 0)]), (2, vec![(4, 0)])]);
        let wanted = Groups::from([(1, vec![(2, 0), (3, 0)]), (3, vec![(6, 0)])]);
        let kinds: Vec<(i32, u32)> = group_updates(&held, &wanted)
            .iter()
            .map(|u| {
                let Some(p4::entity::Entity::PacketReplicationEngineEntry(pre)) =
                    u.entity.as_ref().and_then(|e| e.entity.clone())
                else {
                    panic!("not a group: {u:?}");
                };
                let Some(p4::packet_replication_engine_entry::Type::MulticastGroupEntry(g)) =
                    pre.r#type
                else {
                    panic!("not a multicast group");
                };
                (u.r#type, g.multicast_group_id)
            })
            .collect();
        use p4::update::Type;
        assert_eq!(
            kinds,
            vec![(Type::Delete as i32, 2), (Type::Insert as i32, 3)],
            "group 1 is unchanged: not written"
        );
        let moved = Groups::from([(1, vec![(2, 0), (9, 0)])]);
        let modify = group_updates(&held, &moved);
        assert_eq!(modify.len(), 2, "2 deleted, 1 modified");
        assert_eq!(modify[1].r#type, Type::Modify as i32);
    }

    #[test]
    fn a_cell_whose_count_moved_during_the_read_is_torn() {
        let ids = RegisterIds {
            seq: 1,
            returns: 2,
            path: 3,
            rounds: 4,
            copies: 5,
            counted: 6,
        };
        let read = [
            (4, 1, 9),
            (6, 2, 40),
            (6, 3, 38),
            (5, 2, 40),
            (5, 3, 40),
            // Cell 7 read as the reader asks: count, newest, path, count again.
            (2, 7, 12),
            (1, 7, 9),
            (3, 7, 25_000),
            (2, 7, 12),
            // Cell 8: a return came in between its two counts.
            (2, 8, 11),
            (1, 8, 9),
            (3, 8, 25_000),
            (2, 8, 12),
        ];
        let (records, torn) = ids.records(read.into_iter());
        assert_eq!(torn, vec![8]);
        assert_eq!(records.rounds[&1], 9);
        let tally = |copies, counted| efb_liveness::Tally { copies, counted };
        assert_eq!(records.tallies[&1], [tally(40, 40), tally(40, 38)]);
        let returned = records.returns[&7];
        assert_eq!(
            (returned.newest, returned.count, returned.path_ns),
            (9, 12, 25_000)
        );
    }

    #[test]
    fn register_cells_read_back_and_odd_ones_are_skipped() {
        let cell = |register_id, index, bytes: Vec<u8>| p4::Entity {
            entity: Some(p4::entity::Entity::RegisterEntry(p4::RegisterEntry {
                register_id,
                index: Some(p4::Index { index }),
                data: Some(p4::P4Data {
                    data: Some(p4::p4_data::Data::Bitstring(bytes)),
                }),
            })),
        };
        let read: Vec<(u32, u32, u32)> = cells(vec![
            cell(5, 3, vec![0x01, 0x02]),
            cell(5, 4, vec![0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff]),
            cell(5, 5, vec![1, 0, 0, 0, 0]),
            cell(5, -1, vec![1]),
        ])
        .collect();
        assert_eq!(read, vec![(5, 3, 0x0102), (5, 4, u32::MAX)]);
    }
}
