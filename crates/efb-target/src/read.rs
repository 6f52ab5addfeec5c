//! The Read RPC: wildcard and filtered reads of table entries (with their direct
//! counters), direct counters, indexed counters, action profiles, registers and the
//! replication engine's multicast groups. A request the
//! target refuses is reported as the specification says: the others' entities are
//! returned, then UNKNOWN with one p4.v1.Error per request.

use efb_p4info::TableInfo;
use p4runtime_proto::p4::v1::{self as p4, entity, packet_replication_engine_entry as pre};

use crate::checks::check_key;
use crate::device::{Device, Pipeline, State};
use crate::error::{TargetError, batch_status};
use crate::profile::Profile;
use crate::registers;
use crate::tables::{Entry, Table};

/// Entities per ReadResponse message.
const CHUNK: usize = 1000;

/// The entities of every request, chunked, and the final status.
pub fn read(
    device: &Device,
    req: &p4::ReadRequest,
) -> Result<(Vec<p4::ReadResponse>, Option<tonic::Status>), tonic::Status> {
    if req.device_id != device.options.device_id {
        return Err(tonic::Status::not_found(format!(
            "no device {}",
            req.device_id
        )));
    }
    let state = device
        .state
        .read()
        .map_err(|_| tonic::Status::internal("state poisoned"))?;
    let pipeline = state.pipeline.as_ref().ok_or_else(|| {
        tonic::Status::failed_precondition("no forwarding pipeline config is set")
    })?;
    let reader = Reader {
        state: &state,
        pipeline,
        profile: device.profile(),
    };
    let mut entities = Vec::new();
    let mut results = Vec::new();
    for e in &req.entities {
        match reader.request(e) {
            Ok(found) => {
                entities.extend(found);
                results.push(Ok(()));
            }
            Err(err) => results.push(Err(err)),
        }
    }
    let responses = entities
        .chunks(CHUNK)
        .map(|c| p4::ReadResponse {
            entities: c.to_vec(),
        })
        .collect();
    let status = results
        .iter()
        .any(Result::is_err)
        .then(|| batch_status(&results, "Read"));
    Ok((responses, status))
}

struct Reader<'a> {
    state: &'a State,
    pipeline: &'a Pipeline,
    profile: Profile,
}

fn wrap(e: entity::Entity) -> p4::Entity {
    p4::Entity { entity: Some(e) }
}

impl Reader<'_> {
    fn request(&self, e: &p4::Entity) -> Result<Vec<p4::Entity>, TargetError> {
        match e.entity.as_ref() {
            None => Err(TargetError::invalid(
                "the entity is empty: say which kind of entity to read",
            )),
            Some(entity::Entity::TableEntry(t)) => self.table_entries(t),
            Some(entity::Entity::DirectCounterEntry(d)) => self.direct_counters(d),
            Some(entity::Entity::CounterEntry(c)) => self.counters(c),
            Some(entity::Entity::ActionProfileMember(m)) => Ok(self.members(m)),
            Some(entity::Entity::ActionProfileGroup(g)) => Ok(self.groups(g)),
            Some(entity::Entity::MeterEntry(m)) if m.meter_id == 0 => Ok(Vec::new()),
            Some(entity::Entity::DirectMeterEntry(_)) => Ok(Vec::new()),
            Some(entity::Entity::RegisterEntry(r)) => self.registers(r),
            Some(entity::Entity::ValueSetEntry(v)) if v.value_set_id == 0 => Ok(Vec::new()),
            Some(entity::Entity::DigestEntry(d)) if d.digest_id == 0 => Ok(Vec::new()),
            Some(entity::Entity::PacketReplicationEngineEntry(p)) => self.replication(p),
            Some(_) => Err(TargetError::not_found("the program has no such object")),
        }
    }

    fn table(&self, id: u32) -> Result<(&TableInfo, &Table), TargetError> {
        let info = self
            .pipeline
            .index
            .table(id)
            .ok_or_else(|| TargetError::invalid(format!("unknown table id {id}")))?;
        let table = self.state.objects.tables.get(&id).ok_or_else(|| {
            TargetError::new(tonic::Code::Internal, format!("table {id} has no storage"))
        })?;
        Ok((info, table))
    }

    #[allow(deprecated)]
    fn table_entries(&self, q: &p4::TableEntry) -> Result<Vec<p4::Entity>, TargetError> {
        let filtered = q.action.is_some()
            || q.priority != 0
            || q.controller_metadata != 0
            || !q.metadata.is_empty();
        let with_counter = q.counter_data.is_some();
        if q.table_id == 0 {
            if filtered || !q.r#match.is_empty() || q.is_default_action {
                return Err(TargetError::invalid(
                    "reading every table (table_id 0) takes no other filter",
                ));
            }
            let mut out = Vec::new();
            for info in self.pipeline.index.tables() {
                let (_, table) = self.table(info.id)?;
                out.extend(ordered(table).map(|e| table_entity(e, with_counter)));
            }
            return Ok(out);
        }
        let (info, table) = self.table(q.table_id)?;
        if q.is_default_action {
            return Ok(vec![self.default_entity(info, table)]);
        }
        if !q.r#match.is_empty() {
            let key = check_key(info, &q.r#match, q.priority, self.profile)?;
            return Ok(table
                .entries
                .get(&key.bytes)
                .map(|e| table_entity(e, with_counter))
                .into_iter()
                .collect());
        }
        if filtered && self.profile.is_stratum() {
            return Err(TargetError::unimplemented(
                "filtered wildcard reads (by action, priority or metadata) are not supported on Tofino: read the whole table or one entry",
            ));
        }
        let action_id = match q.action.as_ref().and_then(|a| a.r#type.as_ref()) {
            Some(p4::table_action::Type::Action(a)) => Some(a.action_id),
            Some(_) => return Err(TargetError::invalid("reads filter on direct actions only")),
            None => None,
        };
        Ok(ordered(table)
            .filter(|e| action_id.is_none_or(|id| entry_action(e) == Some(id)))
            .filter(|e| q.priority == 0 || e.entry.priority == q.priority)
            .filter(|e| {
                q.controller_metadata == 0 || e.entry.controller_metadata == q.controller_metadata
            })
            .filter(|e| q.metadata.is_empty() || e.entry.metadata == q.metadata)
            .map(|e| table_entity(e, with_counter))
            .collect())
    }

    fn default_entity(&self, info: &TableInfo, table: &Table) -> p4::Entity {
        let action = match &table.default {
            Some(d) => Some(d.action.clone()),
            None => self
                .pipeline
                .program
                .as_ref()
                .and_then(|p| p.initial_default(info.id))
                .or(info.const_default_action)
                .map(|action_id| p4::Action {
                    action_id,
                    params: Vec::new(),
                }),
        };
        let entry = p4::TableEntry {
            table_id: info.id,
            action: action.map(|a| p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(a)),
            }),
            is_default_action: true,
            r#const: info.const_default_action.is_some(),
            ..Default::default()
        };
        wrap(entity::Entity::TableEntry(entry))
    }

    fn direct_counters(&self, q: &p4::DirectCounterEntry) -> Result<Vec<p4::Entity>, TargetError> {
        let te = q.table_entry.clone().unwrap_or_default();
        let tables: Vec<u32> = if te.table_id == 0 {
            self.pipeline
                .index
                .tables()
                .filter(|t| t.direct_counter.is_some())
                .map(|t| t.id)
                .collect()
        } else {
            let (info, _) = self.table(te.table_id)?;
            if info.direct_counter.is_none() {
                return Err(TargetError::invalid(format!(
                    "table {} has no direct counter",
                    info.name
                )));
            }
            vec![te.table_id]
        };
        let mut out = Vec::new();
        for id in tables {
            let (info, table) = self.table(id)?;
            let entries: Vec<&Entry> = if te.r#match.is_empty() {
                ordered(table).collect()
            } else {
                let key = check_key(info, &te.r#match, te.priority, self.profile)?;
                table.entries.get(&key.bytes).into_iter().collect()
            };
            out.extend(entries.into_iter().map(|e| {
                wrap(entity::Entity::DirectCounterEntry(p4::DirectCounterEntry {
                    table_entry: Some(p4::TableEntry {
                        action: None,
                        ..e.entry.clone()
                    }),
                    data: Some(e.counter.data()),
                }))
            }));
        }
        Ok(out)
    }

    fn counters(&self, q: &p4::CounterEntry) -> Result<Vec<p4::Entity>, TargetError> {
        let ids: Vec<u32> = if q.counter_id == 0 {
            let mut ids: Vec<u32> = self.pipeline.index.counters().map(|c| c.id).collect();
            ids.sort_unstable();
            ids
        } else if self.pipeline.index.counter(q.counter_id).is_some() {
            vec![q.counter_id]
        } else {
            return Err(TargetError::invalid(format!(
                "unknown counter id {}",
                q.counter_id
            )));
        };
        let mut out = Vec::new();
        for id in ids {
            let cells = self
                .state
                .objects
                .counters
                .get(&id)
                .map(Vec::as_slice)
                .unwrap_or_default();
            for (i, cell) in cells.iter().enumerate() {
                let index = i64::try_from(i).unwrap_or(i64::MAX);
                if q.index.as_ref().is_some_and(|want| want.index != index) {
                    continue;
                }
                out.push(wrap(entity::Entity::CounterEntry(p4::CounterEntry {
                    counter_id: id,
                    index: Some(p4::Index { index }),
                    data: Some(cell.data()),
                })));
            }
        }
        if let Some(want) = &q.index
            && out.is_empty()
        {
            return Err(TargetError::out_of_range(format!(
                "counter index {} does not exist",
                want.index
            )));
        }
        Ok(out)
    }

    fn members(&self, q: &p4::ActionProfileMember) -> Vec<p4::Entity> {
        let mut found: Vec<_> = self
            .state
            .objects
            .members
            .iter()
            .filter(|((p, m), _)| {
                (q.action_profile_id == 0 || *p == q.action_profile_id)
                    && (q.member_id == 0 || *m == q.member_id)
            })
            .map(|(k, (m, _))| (*k, m.clone()))
            .collect();
        found.sort_by_key(|(k, _)| *k);
        found
            .into_iter()
            .map(|(_, m)| wrap(entity::Entity::ActionProfileMember(m)))
            .collect()
    }

    fn groups(&self, q: &p4::ActionProfileGroup) -> Vec<p4::Entity> {
        let mut found: Vec<_> = self
            .state
            .objects
            .groups
            .iter()
            .filter(|((p, g), _)| {
                (q.action_profile_id == 0 || *p == q.action_profile_id)
                    && (q.group_id == 0 || *g == q.group_id)
            })
            .map(|(k, g)| (*k, g.group.clone()))
            .collect();
        found.sort_by_key(|(k, _)| *k);
        found
            .into_iter()
            .map(|(_, g)| wrap(entity::Entity::ActionProfileGroup(g)))
            .collect()
    }
}

impl Reader<'_> {
    /// Register cells: one (index set), every cell of one register (index unset), or of
    /// every register (register_id 0; an index then reads that cell of each register that
    /// has it).
    fn registers(&self, q: &p4::RegisterEntry) -> Result<Vec<p4::Entity>, TargetError> {
        let index = &self.pipeline.index;
        let mut infos = if q.register_id == 0 {
            index.registers().collect()
        } else {
            vec![registers::info(index, q.register_id)?]
        };
        infos.sort_by_key(|r| r.id);
        let mut out = Vec::new();
        for info in infos {
            let cell = match registers::cell(info, q.index.as_ref()) {
                Ok(cell) => cell,
                // The wildcard over registers skips those too small for the index.
                Err(_) if q.register_id == 0 => continue,
                Err(e) => return Err(e),
            };
            let register = self.state.objects.registers.get(&info.id).ok_or_else(|| {
                TargetError::new(
                    tonic::Code::Internal,
                    format!("register {} has no storage", info.name),
                )
            })?;
            let cells: Vec<(usize, u32)> = match cell {
                Some(i) => register.get(i).map(|v| (i, v)).into_iter().collect(),
                None => register.values().into_iter().enumerate().collect(),
            };
            out.extend(cells.into_iter().map(|(i, v)| {
                wrap(entity::Entity::RegisterEntry(registers::entry(
                    info.id, i, v,
                )))
            }));
        }
        if let Some(want) = &q.index
            && out.is_empty()
        {
            return Err(TargetError::out_of_range(format!(
                "no register has index {}",
                want.index
            )));
        }
        Ok(out)
    }

    /// Multicast groups: every one (multicast_group_id 0) or the one named, which must
    /// exist (NOT_FOUND otherwise, as Stratum's read of a missing group fails in the SDE).
    /// The target has no clone sessions: a wildcard read of them finds none.
    fn replication(
        &self,
        q: &p4::PacketReplicationEngineEntry,
    ) -> Result<Vec<p4::Entity>, TargetError> {
        let groups = &self.state.objects.multicast;
        let found: Vec<&p4::MulticastGroupEntry> = match &q.r#type {
            Some(pre::Type::MulticastGroupEntry(g)) if g.multicast_group_id == 0 => {
                groups.values().map(|g| &g.entry).collect()
            }
            Some(pre::Type::MulticastGroupEntry(g)) => {
                let id = g.multicast_group_id;
                let group = groups.get(&id).ok_or_else(|| {
                    TargetError::not_found(format!(
                        "multicast group {id} does not exist (multicast_group_id 0 reads every group)"
                    ))
                })?;
                vec![&group.entry]
            }
            Some(pre::Type::CloneSessionEntry(c)) if c.session_id == 0 => Vec::new(),
            Some(pre::Type::CloneSessionEntry(c)) => {
                return Err(TargetError::not_found(format!(
                    "clone session {} does not exist: this target has no clone sessions",
                    c.session_id
                )));
            }
            None => {
                return Err(TargetError::invalid(
                    "the packet replication engine entry is empty: say which to read, multicast_group_entry or clone_session_entry",
                ));
            }
        };
        Ok(found
            .into_iter()
            .map(|g| {
                wrap(entity::Entity::PacketReplicationEngineEntry(
                    p4::PacketReplicationEngineEntry {
                        r#type: Some(pre::Type::MulticastGroupEntry(g.clone())),
                    },
                ))
            })
            .collect())
    }
}

/// Entries in a stable order: by priority (highest first) for TCAM tables, by key for
/// exact ones, so that reads are deterministic.
fn ordered(table: &Table) -> Box<dyn Iterator<Item = &Entry> + '_> {
    if table.order.is_empty() {
        let mut keys: Vec<&Vec<u8>> = table.entries.keys().collect();
        keys.sort_unstable();
        Box::new(keys.into_iter().filter_map(|k| table.entries.get(k)))
    } else {
        Box::new(table.order.values().filter_map(|k| table.entries.get(k)))
    }
}

fn entry_action(e: &Entry) -> Option<u32> {
    match e.entry.action.as_ref().and_then(|a| a.r#type.as_ref()) {
        Some(p4::table_action::Type::Action(a)) => Some(a.action_id),
        _ => None,
    }
}

fn table_entity(e: &Entry, with_counter: bool) -> p4::Entity {
    let mut entry = e.entry.clone();
    if with_counter {
        entry.counter_data = Some(e.counter.data());
    }
    wrap(entity::Entity::TableEntry(entry))
}
