//! The Write RPC: checks in the order the specification gives (device, primary,
//! pipeline), the atomicity mode, then each update validated against the P4Info and
//! applied. Per-update errors go back in the status details; with ROLLBACK_ON_ERROR or
//! DATAPLANE_ATOMIC the batch is all or nothing (the state lock makes every batch atomic
//! for packets anyway).

use efb_p4info::{P4InfoIndex, PortMap, TableInfo};
use p4runtime_proto::p4::v1::{
    self as p4, entity, packet_replication_engine_entry as pre, update, write_request::Atomicity,
};
use tonic::Code;

use crate::checks::{self, ActionUse, check_action, check_key, check_table_action};
use crate::device::{Device, State};
use crate::error::{TargetError, batch_status};
use crate::profile::Profile;
use crate::registers;
use crate::replication::{self, MulticastGroup};
use crate::tables::{self, ActionValue, DefaultEntry, Entry, Group, Objects};

/// How to undo one applied update.
enum Undo {
    Entry {
        table: u32,
        key: Vec<u8>,
        old: Option<Box<Entry>>,
    },
    Default {
        table: u32,
        old: Option<DefaultEntry>,
    },
    Counter {
        id: u32,
        index: usize,
        old: p4::CounterData,
    },
    Member {
        key: (u32, u32),
        old: Option<(p4::ActionProfileMember, ActionValue)>,
    },
    Group {
        key: (u32, u32),
        old: Option<Group>,
    },
    /// Cells `first..` of a register held `old`.
    Register {
        id: u32,
        first: usize,
        old: Vec<u32>,
    },
    Multicast {
        id: u32,
        old: Option<MulticastGroup>,
    },
}

pub fn write(device: &Device, req: &p4::WriteRequest) -> Result<(), tonic::Status> {
    if req.device_id != device.options.device_id {
        return Err(tonic::Status::not_found(format!(
            "no device {}",
            req.device_id
        )));
    }
    device
        .arbitration
        .lock()
        .map_err(|_| tonic::Status::internal("arbitration state poisoned"))?
        .check_primary(&req.role, req.election_id.as_ref())?;
    let has_pipeline = device
        .state
        .read()
        .map_err(|_| tonic::Status::internal("state poisoned"))?
        .pipeline
        .is_some();
    if !has_pipeline {
        return Err(no_pipeline());
    }
    let atomic = match Atomicity::try_from(req.atomicity) {
        Ok(Atomicity::ContinueOnError) => false,
        Ok(_) if device.profile().is_stratum() => {
            return Err(tonic::Status::unimplemented(
                "only CONTINUE_ON_ERROR batches are supported on Tofino",
            ));
        }
        Ok(_) => true,
        Err(_) => {
            return Err(tonic::Status::invalid_argument(format!(
                "unknown atomicity {}",
                req.atomicity
            )));
        }
    };
    // An atomic batch holds the state for its whole length. Any other is applied a few
    // updates at a time, letting packets through between, as a chip forwards while it is
    // written (held for a whole 256-update batch, the state kept keep-alives waiting for
    // its length).
    let per_lock = if atomic {
        req.updates.len().max(1)
    } else {
        UPDATES_PER_LOCK
    };
    let mut results = Vec::with_capacity(req.updates.len());
    for chunk in req.updates.chunks(per_lock) {
        let mut state = device
            .state
            .write()
            .map_err(|_| tonic::Status::internal("state poisoned"))?;
        // The index only: the pipeline's config holds the device config (megabytes), and
        // a copy of it at every write cost a one-entry write 1.1 ms.
        let index = state
            .pipeline
            .as_ref()
            .map(|p| p.index.clone())
            .ok_or_else(no_pipeline)?;
        let mut batch = Batch {
            index: &index,
            ports: device.ports.map(),
            profile: device.profile(),
            table_size_limit: device.options.table_size_limit,
            state: &mut state,
            undo: Vec::new(),
        };
        results.extend(batch.apply_all(chunk, atomic));
        state.refresh_peers();
    }
    if results.iter().all(Result::is_ok) {
        Ok(())
    } else {
        Err(batch_status(&results, "Write"))
    }
}

fn no_pipeline() -> tonic::Status {
    tonic::Status::failed_precondition("no forwarding pipeline config is set")
}

/// Updates of a non-atomic batch applied under one hold of the state.
const UPDATES_PER_LOCK: usize = 16;

struct Batch<'a> {
    index: &'a P4InfoIndex,
    /// The chip's ports, which replicas must name.
    ports: &'a PortMap,
    profile: Profile,
    /// A smaller capacity than the P4Info's for every table (0: none), to test full tables.
    table_size_limit: u64,
    state: &'a mut State,
    undo: Vec<Undo>,
}

impl Batch<'_> {
    fn apply_all(&mut self, updates: &[p4::Update], atomic: bool) -> Vec<Result<(), TargetError>> {
        let mut results = Vec::with_capacity(updates.len());
        for (i, u) in updates.iter().enumerate() {
            let result = self.apply(u);
            let failed = result.is_err();
            results.push(result);
            if atomic && failed {
                self.rollback();
                let why = format!(
                    "not applied: update {i} of the batch failed and the batch was rolled back"
                );
                for (j, r) in results.iter_mut().enumerate() {
                    if j != i {
                        *r = Err(TargetError::new(Code::Aborted, why.clone()));
                    }
                }
                results.extend(
                    (i + 1..updates.len())
                        .map(|_| Err(TargetError::new(Code::Aborted, why.clone()))),
                );
                return results;
            }
        }
        results
    }

    fn rollback(&mut self) {
        while let Some(undo) = self.undo.pop() {
            let objects = &mut self.state.objects;
            match undo {
                Undo::Entry { table, key, old } => {
                    let prioritized = self
                        .index
                        .table(table)
                        .is_some_and(TableInfo::needs_priority);
                    if let Some(t) = objects.tables.get_mut(&table) {
                        t.remove(&key);
                        if let Some(old) = old {
                            t.insert(key, *old, prioritized);
                        }
                    }
                }
                Undo::Default { table, old } => {
                    if let Some(t) = objects.tables.get_mut(&table) {
                        t.default = old;
                    }
                }
                Undo::Counter { id, index, old } => {
                    if let Some(cell) = objects.counters.get(&id).and_then(|c| c.get(index)) {
                        cell.set(&old);
                    }
                }
                Undo::Member { key, old } => restore(&mut objects.members, key, old),
                Undo::Group { key, old } => restore(&mut objects.groups, key, old),
                Undo::Register { id, first, old } => {
                    if let Some(r) = objects.registers.get(&id) {
                        for (i, v) in old.iter().enumerate() {
                            r.set(first + i, *v);
                        }
                    }
                }
                Undo::Multicast { id, old: Some(g) } => {
                    objects.multicast.insert(id, g);
                }
                Undo::Multicast { id, old: None } => {
                    objects.multicast.remove(&id);
                }
            }
        }
    }

    fn apply(&mut self, u: &p4::Update) -> Result<(), TargetError> {
        let kind = update::Type::try_from(u.r#type).unwrap_or(update::Type::Unspecified);
        if kind == update::Type::Unspecified {
            return Err(TargetError::invalid("update type is UNSPECIFIED"));
        }
        let entity = u
            .entity
            .as_ref()
            .and_then(|e| e.entity.as_ref())
            .ok_or_else(|| TargetError::invalid("the update has no entity"))?;
        match entity {
            entity::Entity::TableEntry(e) => self.table_entry(kind, e),
            entity::Entity::DirectCounterEntry(e) => self.direct_counter(kind, e),
            entity::Entity::CounterEntry(e) => self.counter(kind, e),
            entity::Entity::ActionProfileMember(m) => self.member(kind, m),
            entity::Entity::ActionProfileGroup(g) => self.group(kind, g),
            entity::Entity::RegisterEntry(e) => self.register(kind, e),
            entity::Entity::PacketReplicationEngineEntry(e) => self.replication(kind, e),
            _ => Err(TargetError::unimplemented(
                "this target writes table entries, counters, action profiles, registers and multicast groups only",
            )),
        }
    }

    fn table_info(&self, id: u32) -> Result<&TableInfo, TargetError> {
        self.index
            .table(id)
            .ok_or_else(|| TargetError::invalid(format!("unknown table id {id}")))
    }

    fn table_entry(&mut self, kind: update::Type, e: &p4::TableEntry) -> Result<(), TargetError> {
        let table = self.table_info(e.table_id)?.clone();
        if e.r#const {
            return Err(TargetError::invalid("is_const may not be set in a write"));
        }
        if e.is_default_action {
            return self.default_entry(kind, &table, e);
        }
        if table.is_const {
            return Err(TargetError::permission(format!(
                "table {} is const",
                table.name
            )));
        }
        if table.fields.is_empty() && kind == update::Type::Insert {
            return Err(TargetError::invalid(format!(
                "table {} is keyless: only its default entry can be written",
                table.name
            )));
        }
        let key = check_key(&table, &e.r#match, e.priority, self.profile)?;
        if e.meter_config.is_some() || e.meter_counter_data.is_some() {
            return Err(TargetError::invalid(format!(
                "table {} has no direct meter",
                table.name
            )));
        }
        if e.counter_data.is_some() && table.direct_counter.is_none() {
            return Err(TargetError::invalid(format!(
                "table {} has no direct counter",
                table.name
            )));
        }
        match kind {
            update::Type::Insert => self.insert(&table, e, key),
            update::Type::Modify => self.modify(&table, e, key),
            _ => self.delete(&table, key),
        }
    }

    fn insert(
        &mut self,
        table: &TableInfo,
        e: &p4::TableEntry,
        key: checks::Key,
    ) -> Result<(), TargetError> {
        let action = e
            .action
            .as_ref()
            .ok_or_else(|| TargetError::invalid("an inserted entry needs an action"))?;
        let (action, value) =
            check_table_action(self.index, &self.state.objects, table, action, self.profile)?;
        let seq = self.state.objects.next_seq();
        let limit = self.table_size_limit;
        let t = self.table_mut(table.id)?;
        if t.entries.contains_key(&key.bytes) {
            return Err(TargetError::new(
                Code::AlreadyExists,
                format!("the entry exists already in {}", table.name),
            ));
        }
        let size = match (table.size, limit) {
            (size, 0) => size,
            (0, limit) => limit,
            (size, limit) => size.min(limit),
        };
        if size > 0 && t.entries.len() as u64 >= size {
            return Err(TargetError::new(
                Code::ResourceExhausted,
                format!("table {} is full ({size} entries)", table.name),
            ));
        }
        let entry = Entry {
            entry: stored_entry(e, key.matches, action),
            matchers: key.matchers,
            action: value,
            seq,
            counter: tables::CounterCell::default(),
        };
        self.store(table, e, key.bytes, entry, None)
    }

    /// Puts `entry` in its table (with the counter values the update gave, if any) and
    /// remembers what it replaced for the undo.
    fn store(
        &mut self,
        table: &TableInfo,
        e: &p4::TableEntry,
        key: Vec<u8>,
        entry: Entry,
        old: Option<Entry>,
    ) -> Result<(), TargetError> {
        if let Some(data) = &e.counter_data {
            entry.counter.set(data);
        }
        self.table_mut(table.id)?
            .insert(key.clone(), entry, table.needs_priority());
        self.undo.push(Undo::Entry {
            table: table.id,
            key,
            old: old.map(Box::new),
        });
        Ok(())
    }

    fn modify(
        &mut self,
        table: &TableInfo,
        e: &p4::TableEntry,
        key: checks::Key,
    ) -> Result<(), TargetError> {
        let new_action = match &e.action {
            Some(a) => Some(check_table_action(
                self.index,
                &self.state.objects,
                table,
                a,
                self.profile,
            )?),
            None => None,
        };
        let t = self.table_mut(table.id)?;
        let old =
            t.entries.get(&key.bytes).cloned().ok_or_else(|| {
                TargetError::not_found(format!("no such entry in {}", table.name))
            })?;
        let mut entry = old.clone();
        if let Some((action, value)) = new_action {
            entry.entry = stored_entry(e, key.matches, action);
            entry.action = value;
        }
        self.store(table, e, key.bytes, entry, Some(old))
    }

    fn delete(&mut self, table: &TableInfo, key: checks::Key) -> Result<(), TargetError> {
        let t = self.table_mut(table.id)?;
        let old = t
            .remove(&key.bytes)
            .ok_or_else(|| TargetError::not_found(format!("no such entry in {}", table.name)))?;
        self.undo.push(Undo::Entry {
            table: table.id,
            key: key.bytes,
            old: Some(Box::new(old)),
        });
        Ok(())
    }

    fn default_entry(
        &mut self,
        kind: update::Type,
        table: &TableInfo,
        e: &p4::TableEntry,
    ) -> Result<(), TargetError> {
        if kind != update::Type::Modify {
            return Err(TargetError::invalid(
                "the default entry can only be modified",
            ));
        }
        if !e.r#match.is_empty() || e.priority != 0 {
            return Err(TargetError::invalid(
                "the default entry has no match and priority 0",
            ));
        }
        if table.const_default_action.is_some() {
            return Err(TargetError::permission(format!(
                "the default action of {} is const",
                table.name
            )));
        }
        let new = match &e.action {
            None => None,
            Some(p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(a)),
            }) => {
                let (action, value) =
                    check_action(self.index, table, a, ActionUse::Default, self.profile)?;
                Some(DefaultEntry { action, value })
            }
            Some(_) => {
                return Err(TargetError::invalid(
                    "a default action must be a direct action",
                ));
            }
        };
        let t = self.table_mut(table.id)?;
        let old = std::mem::replace(&mut t.default, new);
        self.undo.push(Undo::Default {
            table: table.id,
            old,
        });
        Ok(())
    }

    fn table_mut(&mut self, id: u32) -> Result<&mut tables::Table, TargetError> {
        self.state
            .objects
            .tables
            .get_mut(&id)
            .ok_or_else(|| TargetError::new(Code::Internal, format!("table {id} has no storage")))
    }

    fn direct_counter(
        &mut self,
        kind: update::Type,
        e: &p4::DirectCounterEntry,
    ) -> Result<(), TargetError> {
        if kind != update::Type::Modify {
            return Err(TargetError::invalid(
                "direct counters are only modified; they come and go with their entries",
            ));
        }
        let te = e
            .table_entry
            .as_ref()
            .ok_or_else(|| TargetError::invalid("a direct counter entry names its table entry"))?;
        let table = self.table_info(te.table_id)?.clone();
        if table.direct_counter.is_none() {
            return Err(TargetError::invalid(format!(
                "table {} has no direct counter",
                table.name
            )));
        }
        let key = check_key(&table, &te.r#match, te.priority, self.profile)?;
        let data = e.data.unwrap_or_default();
        let t = self.table_mut(table.id)?;
        let entry = t
            .entries
            .get(&key.bytes)
            .ok_or_else(|| TargetError::not_found(format!("no such entry in {}", table.name)))?;
        let old = entry.clone();
        entry.counter.set(&data);
        self.undo.push(Undo::Entry {
            table: table.id,
            key: key.bytes,
            old: Some(Box::new(old)),
        });
        Ok(())
    }

    fn counter(&mut self, kind: update::Type, e: &p4::CounterEntry) -> Result<(), TargetError> {
        if kind != update::Type::Modify {
            return Err(TargetError::invalid("counter cells are only modified"));
        }
        let info = self
            .index
            .counter(e.counter_id)
            .ok_or_else(|| TargetError::invalid(format!("unknown counter id {}", e.counter_id)))?;
        let index = e
            .index
            .as_ref()
            .ok_or_else(|| TargetError::invalid("a counter write names its index"))?
            .index;
        let cell = usize::try_from(index).ok().and_then(|i| {
            self.state
                .objects
                .counters
                .get(&e.counter_id)
                .and_then(|c| c.get(i))
                .map(|c| (i, c))
        });
        let Some((i, cell)) = cell else {
            return Err(TargetError::out_of_range(format!(
                "counter {} has no index {index}",
                info.name
            )));
        };
        let old = cell.data();
        cell.set(&e.data.unwrap_or_default());
        self.undo.push(Undo::Counter {
            id: e.counter_id,
            index: i,
            old,
        });
        Ok(())
    }

    fn member(
        &mut self,
        kind: update::Type,
        m: &p4::ActionProfileMember,
    ) -> Result<(), TargetError> {
        let profile = self
            .index
            .action_profile(m.action_profile_id)
            .ok_or_else(|| {
                TargetError::invalid(format!("unknown action profile id {}", m.action_profile_id))
            })?
            .clone();
        let key = (m.action_profile_id, m.member_id);
        let objects = &mut self.state.objects;
        let exists = objects.members.contains_key(&key);
        let old = objects.members.get(&key).cloned();
        match kind {
            update::Type::Delete => {
                if !exists {
                    return Err(TargetError::not_found(format!(
                        "member {} does not exist",
                        m.member_id
                    )));
                }
                if member_in_use(objects, key) {
                    return Err(TargetError::precondition(format!(
                        "member {} is used by a group or an entry",
                        m.member_id
                    )));
                }
                objects.members.remove(&key);
            }
            _ => {
                if kind == update::Type::Insert && exists {
                    return Err(TargetError::new(
                        Code::AlreadyExists,
                        format!("member {} exists already", m.member_id),
                    ));
                }
                if kind == update::Type::Modify && !exists {
                    return Err(TargetError::not_found(format!(
                        "member {} does not exist",
                        m.member_id
                    )));
                }
                if kind == update::Type::Insert
                    && profile.size > 0
                    && objects.members.keys().filter(|k| k.0 == key.0).count() as u64
                        >= profile.size
                {
                    return Err(TargetError::new(
                        Code::ResourceExhausted,
                        format!("action profile {} is full", profile.name),
                    ));
                }
                let action = m
                    .action
                    .as_ref()
                    .ok_or_else(|| TargetError::invalid("a member needs an action"))?;
                let table = profile
                    .table_ids
                    .iter()
                    .filter_map(|t| self.index.table(*t))
                    .find(|t| t.action_scope(action.action_id).is_some())
                    .ok_or_else(|| {
                        TargetError::invalid(format!(
                            "action {} is not an action of the profile's tables",
                            action.action_id
                        ))
                    })?;
                let (canonical, value) =
                    check_action(self.index, table, action, ActionUse::Entry, self.profile)?;
                let stored = p4::ActionProfileMember {
                    action: Some(canonical),
                    ..m.clone()
                };
                self.state.objects.members.insert(key, (stored, value));
            }
        }
        self.undo.push(Undo::Member { key, old });
        Ok(())
    }

    fn group(&mut self, kind: update::Type, g: &p4::ActionProfileGroup) -> Result<(), TargetError> {
        let profile = self
            .index
            .action_profile(g.action_profile_id)
            .ok_or_else(|| {
                TargetError::invalid(format!("unknown action profile id {}", g.action_profile_id))
            })?
            .clone();
        if !profile.with_selector {
            return Err(TargetError::invalid(format!(
                "action profile {} has no selector: no groups",
                profile.name
            )));
        }
        let key = (g.action_profile_id, g.group_id);
        let objects = &mut self.state.objects;
        let old = objects.groups.get(&key).cloned();
        match kind {
            update::Type::Delete => {
                if old.is_none() {
                    return Err(TargetError::not_found(format!(
                        "group {} does not exist",
                        g.group_id
                    )));
                }
                if group_in_use(objects, g.group_id) {
                    return Err(TargetError::precondition(format!(
                        "group {} is used by a table entry",
                        g.group_id
                    )));
                }
                objects.groups.remove(&key);
            }
            _ => {
                if kind == update::Type::Insert && old.is_some() {
                    return Err(TargetError::new(
                        Code::AlreadyExists,
                        format!("group {} exists already", g.group_id),
                    ));
                }
                if kind == update::Type::Modify && old.is_none() {
                    return Err(TargetError::not_found(format!(
                        "group {} does not exist",
                        g.group_id
                    )));
                }
                check_group_members(objects, g, profile.max_group_size, self.profile)?;
                objects.groups.insert(key, Group { group: g.clone() });
            }
        }
        self.undo.push(Undo::Group { key, old });
        Ok(())
    }
}

impl Batch<'_> {
    /// A register's cell, or every cell when the index is unset (a reset): MODIFY only,
    /// as on Tofino, where registers are arrays the program declares, never inserted.
    fn register(&mut self, kind: update::Type, e: &p4::RegisterEntry) -> Result<(), TargetError> {
        if e.register_id == 0 {
            return Err(TargetError::invalid(
                "a register write names its register: register_id 0 is the wildcard of reads",
            ));
        }
        let info = registers::info(self.index, e.register_id)?;
        if kind != update::Type::Modify {
            return Err(TargetError::invalid(format!(
                "register {}: {} does not apply to register cells; MODIFY sets one (index set) or every one (index unset)",
                info.name,
                kind.as_str_name()
            )));
        }
        let value = registers::value(
            info,
            e.data.as_ref(),
            self.profile.canonical_bytes_required(),
        )?;
        let cell = registers::cell(info, e.index.as_ref())?;
        let register = self
            .state
            .objects
            .registers
            .get(&e.register_id)
            .ok_or_else(|| {
                TargetError::new(
                    Code::Internal,
                    format!("register {} has no storage", info.name),
                )
            })?;
        let (first, old) = match cell {
            Some(i) => {
                let old = register.get(i).unwrap_or(0);
                register.set(i, value);
                (i, vec![old])
            }
            None => {
                let old = register.values();
                register.set_all(value);
                (0, old)
            }
        };
        self.undo.push(Undo::Register {
            id: e.register_id,
            first,
            old,
        });
        Ok(())
    }

    fn replication(
        &mut self,
        kind: update::Type,
        e: &p4::PacketReplicationEngineEntry,
    ) -> Result<(), TargetError> {
        match &e.r#type {
            Some(pre::Type::MulticastGroupEntry(g)) => self.multicast_group(kind, g),
            Some(pre::Type::CloneSessionEntry(c)) => Err(TargetError::unimplemented(format!(
                "clone session {}: clone sessions are not implemented (the program clones nothing); the replication engine takes multicast groups (multicast_group_entry)",
                c.session_id
            ))),
            None => Err(TargetError::invalid(
                "the packet replication engine entry is empty: set multicast_group_entry",
            )),
        }
    }

    /// INSERT a group, MODIFY it (its replicas replaced), DELETE it (replicas ignored).
    fn multicast_group(
        &mut self,
        kind: update::Type,
        g: &p4::MulticastGroupEntry,
    ) -> Result<(), TargetError> {
        let id = g.multicast_group_id;
        replication::check_group_id(id)?;
        let multicast = &mut self.state.objects.multicast;
        let old = multicast.get(&id).cloned();
        match (kind, &old) {
            (update::Type::Insert, Some(_)) => {
                return Err(TargetError::new(
                    Code::AlreadyExists,
                    format!("multicast group {id} exists already: MODIFY replaces its replicas"),
                ));
            }
            (update::Type::Modify | update::Type::Delete, None) => {
                return Err(TargetError::not_found(format!(
                    "multicast group {id} does not exist: INSERT it first"
                )));
            }
            _ => {}
        }
        if kind == update::Type::Delete {
            multicast.remove(&id);
        } else {
            let group = replication::check_group(g, self.ports, self.profile)?;
            multicast.insert(id, group);
        }
        self.undo.push(Undo::Multicast { id, old });
        Ok(())
    }
}

fn check_group_members(
    objects: &Objects,
    g: &p4::ActionProfileGroup,
    max: u32,
    profile: Profile,
) -> Result<(), TargetError> {
    let mut total: u64 = 0;
    for m in &g.members {
        if m.weight <= 0 {
            return Err(TargetError::invalid(format!(
                "member {} has weight {}: weights are positive",
                m.member_id, m.weight
            )));
        }
        if profile.is_stratum() && m.weight != 1 {
            return Err(TargetError::invalid(format!(
                "member {} has weight {}: Tofino supports weight 1 only",
                m.member_id, m.weight
            )));
        }
        if !objects
            .members
            .contains_key(&(g.action_profile_id, m.member_id))
        {
            return Err(TargetError::not_found(format!(
                "member {} does not exist",
                m.member_id
            )));
        }
        total += u64::try_from(m.weight).unwrap_or(0);
    }
    let limit = if g.max_size > 0 {
        u64::try_from(g.max_size).unwrap_or(0)
    } else {
        u64::from(max)
    };
    if limit > 0 && total > limit {
        return Err(TargetError::new(
            Code::ResourceExhausted,
            format!(
                "group {} holds {total} weighted members, at most {limit}",
                g.group_id
            ),
        ));
    }
    Ok(())
}

fn member_in_use(objects: &Objects, key: (u32, u32)) -> bool {
    let in_group = objects
        .groups
        .iter()
        .any(|(k, g)| k.0 == key.0 && g.group.members.iter().any(|m| m.member_id == key.1));
    in_group
        || objects.tables.values().any(|t| {
            t.entries
                .values()
                .any(|e| e.action == ActionValue::Member(key.1))
        })
}

fn group_in_use(objects: &Objects, group: u32) -> bool {
    objects.tables.values().any(|t| {
        t.entries
            .values()
            .any(|e| e.action == ActionValue::Group(group))
    })
}

fn restore<K: std::hash::Hash + Eq, V>(
    map: &mut std::collections::HashMap<K, V>,
    key: K,
    old: Option<V>,
) {
    match old {
        Some(v) => {
            map.insert(key, v);
        }
        None => {
            map.remove(&key);
        }
    }
}

/// The entry as reads return it: canonical key and action, the controller's metadata,
/// no direct-resource data (reads add it when asked).
fn stored_entry(
    e: &p4::TableEntry,
    matches: Vec<p4::FieldMatch>,
    action: p4::TableAction,
) -> p4::TableEntry {
    #[allow(deprecated)]
    p4::TableEntry {
        table_id: e.table_id,
        r#match: matches,
        action: Some(action),
        priority: e.priority,
        controller_metadata: e.controller_metadata,
        idle_timeout_ns: e.idle_timeout_ns,
        metadata: e.metadata.clone(),
        ..Default::default()
    }
}
