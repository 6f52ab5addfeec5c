//! Names -> ids, widths and match kinds, built once from a P4Info. Building it also
//! checks the P4Info's internal consistency (unique ids with the right prefixes,
//! references that resolve), which is what a target checks before accepting a pipeline.

use std::collections::{HashMap, HashSet};

use p4runtime_proto::p4::config::v1::{P4Info, Preamble, action_ref, match_field, p4_ids::Prefix};

use crate::P4InfoError;
use crate::names::{ActionName, CounterName, FieldName, PacketFieldName, RegisterName, TableName};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
    /// An architecture-specific kind (`other_match_type`), which no code here handles.
    Other,
}

impl MatchKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Exact => "exact",
            MatchKind::Lpm => "lpm",
            MatchKind::Ternary => "ternary",
            MatchKind::Range => "range",
            MatchKind::Optional => "optional",
            MatchKind::Other => "other",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    pub id: u32,
    pub name: String,
    pub bitwidth: u32,
    pub kind: MatchKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub id: u32,
    pub name: String,
    pub bitwidth: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionInfo {
    pub id: u32,
    pub name: String,
    pub alias: String,
    pub params: Vec<ParamInfo>,
}

impl ActionInfo {
    pub fn param(&self, name: FieldName) -> Option<&ParamInfo> {
        self.params.iter().find(|p| p.name == name.as_str())
    }
}

/// Where an action may appear in a table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionScope {
    TableAndDefault,
    TableOnly,
    DefaultOnly,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    pub id: u32,
    pub name: String,
    pub alias: String,
    pub fields: Vec<FieldInfo>,
    /// Action id and scope, in P4Info order.
    pub actions: Vec<(u32, ActionScope)>,
    pub const_default_action: Option<u32>,
    /// The action the table starts with as its default (P4Runtime 1.4; older P4Infos
    /// leave it out).
    pub initial_default_action: Option<u32>,
    pub implementation_id: Option<u32>,
    pub direct_counter: Option<u32>,
    pub direct_meter: Option<u32>,
    pub size: u64,
    pub is_const: bool,
}

impl TableInfo {
    pub fn field(&self, name: FieldName) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name.as_str())
    }

    pub fn field_by_id(&self, id: u32) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.id == id)
    }

    /// P4Runtime: entries need a priority exactly when some field is ternary, range or
    /// optional (these are the TCAM tables).
    pub fn needs_priority(&self) -> bool {
        self.fields.iter().any(|f| {
            matches!(
                f.kind,
                MatchKind::Ternary | MatchKind::Range | MatchKind::Optional
            )
        })
    }

    pub fn action_scope(&self, action_id: u32) -> Option<ActionScope> {
        self.actions
            .iter()
            .find(|(id, _)| *id == action_id)
            .map(|(_, scope)| *scope)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketMetadataInfo {
    pub id: u32,
    pub name: String,
    /// (id, name, bitwidth) in header order.
    pub fields: Vec<ParamInfo>,
}

impl PacketMetadataInfo {
    pub fn field(&self, name: PacketFieldName) -> Option<&ParamInfo> {
        self.fields.iter().find(|p| p.name == name.as_str())
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    pub id: u32,
    pub name: String,
    pub size: u64,
}

/// A register of bit strings (the only kind the program declares): `size` cells of
/// `bitwidth` bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterInfo {
    pub id: u32,
    pub name: String,
    pub bitwidth: u32,
    pub size: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ActionProfileInfo {
    pub id: u32,
    pub name: String,
    pub table_ids: Vec<u32>,
    pub with_selector: bool,
    pub size: u64,
    pub max_group_size: u32,
}

/// The P4Info, indexed by id and by name (fully qualified or alias).
#[derive(Clone, Debug, Default)]
pub struct P4InfoIndex {
    tables: HashMap<u32, TableInfo>,
    actions: HashMap<u32, ActionInfo>,
    counters: HashMap<u32, CounterInfo>,
    direct_counters: HashMap<u32, u32>,
    registers: HashMap<u32, RegisterInfo>,
    action_profiles: HashMap<u32, ActionProfileInfo>,
    names: HashMap<(Prefix, String), u32>,
    packet_in: Option<PacketMetadataInfo>,
    packet_out: Option<PacketMetadataInfo>,
    table_order: Vec<u32>,
}

fn invalid(msg: impl Into<String>) -> P4InfoError {
    P4InfoError::Invalid(msg.into())
}

fn width(bits: i32, what: &str) -> Result<u32, P4InfoError> {
    u32::try_from(bits)
        .ok()
        .filter(|b| *b > 0)
        .ok_or_else(|| invalid(format!("{what} has bitwidth {bits}")))
}

impl P4InfoIndex {
    pub fn new(p4info: &P4Info) -> Result<P4InfoIndex, P4InfoError> {
        let mut index = P4InfoIndex::default();
        let mut seen = HashSet::new();
        index.add_actions(p4info, &mut seen)?;
        index.add_counters(p4info, &mut seen)?;
        index.add_registers(p4info, &mut seen)?;
        index.add_action_profiles(p4info, &mut seen)?;
        index.add_tables(p4info, &mut seen)?;
        index.add_packet_metadata(p4info, &mut seen)?;
        index.check_direct_counters()?;
        Ok(index)
    }

    fn preamble<'a>(
        &mut self,
        preamble: Option<&'a Preamble>,
        prefix: Prefix,
        seen: &mut HashSet<u32>,
    ) -> Result<&'a Preamble, P4InfoError> {
        let p = preamble.ok_or_else(|| invalid(format!("a {prefix:?} has no preamble")))?;
        if p.id == 0 || p.id >> 24 != prefix as u32 {
            return Err(invalid(format!(
                "{} has id {:#010x}, not a {prefix:?} id (prefix {:#04x})",
                p.name, p.id, prefix as u32
            )));
        }
        if !seen.insert(p.id) {
            return Err(invalid(format!("id {:#010x} is used twice", p.id)));
        }
        for name in [&p.name, &p.alias] {
            if name.is_empty() {
                continue;
            }
            let previous = self.names.insert((prefix, name.clone()), p.id);
            if previous.is_some_and(|id| id != p.id) {
                return Err(invalid(format!("two {prefix:?}s are named {name}")));
            }
        }
        Ok(p)
    }

    fn add_actions(&mut self, p4info: &P4Info, seen: &mut HashSet<u32>) -> Result<(), P4InfoError> {
        for action in &p4info.actions {
            let p = self.preamble(action.preamble.as_ref(), Prefix::Action, seen)?;
            let mut params = Vec::new();
            for param in &action.params {
                let what = format!("parameter {} of action {}", param.name, p.name);
                if param.id == 0 || params.iter().any(|q: &ParamInfo| q.id == param.id) {
                    return Err(invalid(format!("{what} has a zero or repeated id")));
                }
                params.push(ParamInfo {
                    id: param.id,
                    name: param.name.clone(),
                    bitwidth: width(param.bitwidth, &what)?,
                });
            }
            self.actions.insert(
                p.id,
                ActionInfo {
                    id: p.id,
                    name: p.name.clone(),
                    alias: p.alias.clone(),
                    params,
                },
            );
        }
        Ok(())
    }

    fn add_counters(
        &mut self,
        p4info: &P4Info,
        seen: &mut HashSet<u32>,
    ) -> Result<(), P4InfoError> {
        for counter in &p4info.counters {
            let p = self.preamble(counter.preamble.as_ref(), Prefix::Counter, seen)?;
            let size = u64::try_from(counter.size).unwrap_or(0);
            self.counters.insert(
                p.id,
                CounterInfo {
                    id: p.id,
                    name: p.name.clone(),
                    size,
                },
            );
        }
        for counter in &p4info.direct_counters {
            let p = self.preamble(counter.preamble.as_ref(), Prefix::DirectCounter, seen)?;
            self.direct_counters.insert(p.id, counter.direct_table_id);
        }
        for meter in &p4info.direct_meters {
            self.preamble(meter.preamble.as_ref(), Prefix::DirectMeter, seen)?;
        }
        for meter in &p4info.meters {
            self.preamble(meter.preamble.as_ref(), Prefix::Meter, seen)?;
        }
        Ok(())
    }

    fn add_registers(
        &mut self,
        p4info: &P4Info,
        seen: &mut HashSet<u32>,
    ) -> Result<(), P4InfoError> {
        use p4runtime_proto::p4::config::v1::{
            p4_bitstring_like_type_spec as bitstring, p4_data_type_spec as data,
        };
        for register in &p4info.registers {
            let p = self.preamble(register.preamble.as_ref(), Prefix::Register, seen)?;
            let bits = match register
                .type_spec
                .as_ref()
                .and_then(|t| t.type_spec.as_ref())
            {
                Some(data::TypeSpec::Bitstring(b)) => match &b.type_spec {
                    Some(bitstring::TypeSpec::Bit(bit)) => Some(bit.bitwidth),
                    _ => None,
                },
                _ => None,
            };
            let what = format!("register {}", p.name);
            let bits = bits.ok_or_else(|| invalid(format!("{what} is not of type bit<W>")))?;
            self.registers.insert(
                p.id,
                RegisterInfo {
                    id: p.id,
                    name: p.name.clone(),
                    bitwidth: width(bits, &what)?,
                    size: u64::try_from(register.size).unwrap_or(0),
                },
            );
        }
        Ok(())
    }

    fn add_action_profiles(
        &mut self,
        p4info: &P4Info,
        seen: &mut HashSet<u32>,
    ) -> Result<(), P4InfoError> {
        for profile in &p4info.action_profiles {
            let p = self.preamble(profile.preamble.as_ref(), Prefix::ActionProfile, seen)?;
            self.action_profiles.insert(
                p.id,
                ActionProfileInfo {
                    id: p.id,
                    name: p.name.clone(),
                    table_ids: profile.table_ids.clone(),
                    with_selector: profile.with_selector,
                    size: u64::try_from(profile.size).unwrap_or(0),
                    max_group_size: u32::try_from(profile.max_group_size).unwrap_or(0),
                },
            );
        }
        Ok(())
    }

    fn add_tables(&mut self, p4info: &P4Info, seen: &mut HashSet<u32>) -> Result<(), P4InfoError> {
        for table in &p4info.tables {
            let p = self.preamble(table.preamble.as_ref(), Prefix::Table, seen)?;
            let fields = table_fields(&p.name, &table.match_fields)?;
            let actions = self.table_actions(&p.name, &table.action_refs)?;
            let const_default =
                (table.const_default_action_id != 0).then_some(table.const_default_action_id);
            if let Some(id) = const_default
                && !actions.iter().any(|(a, _)| *a == id)
            {
                return Err(invalid(format!(
                    "{}: const default action {id} is not among its actions",
                    p.name
                )));
            }
            let implementation_id =
                (table.implementation_id != 0).then_some(table.implementation_id);
            if let Some(id) = implementation_id
                && !self.action_profiles.contains_key(&id)
            {
                return Err(invalid(format!(
                    "{}: implementation {id} is no action profile",
                    p.name
                )));
            }
            let (direct_counter, direct_meter) =
                self.direct_resources(&p.name, &table.direct_resource_ids)?;
            self.table_order.push(p.id);
            self.tables.insert(
                p.id,
                TableInfo {
                    id: p.id,
                    name: p.name.clone(),
                    alias: p.alias.clone(),
                    fields,
                    actions,
                    const_default_action: const_default,
                    initial_default_action: table
                        .initial_default_action
                        .as_ref()
                        .map(|call| call.action_id),
                    implementation_id,
                    direct_counter,
                    direct_meter,
                    size: u64::try_from(table.size).unwrap_or(0),
                    is_const: table.is_const_table,
                },
            );
        }
        Ok(())
    }

    fn table_actions(
        &self,
        table: &str,
        refs: &[p4runtime_proto::p4::config::v1::ActionRef],
    ) -> Result<Vec<(u32, ActionScope)>, P4InfoError> {
        refs.iter()
            .map(|r| {
                if !self.actions.contains_key(&r.id) {
                    return Err(invalid(format!("{table}: action {} does not exist", r.id)));
                }
                let scope = match action_ref::Scope::try_from(r.scope) {
                    Ok(action_ref::Scope::TableOnly) => ActionScope::TableOnly,
                    Ok(action_ref::Scope::DefaultOnly) => ActionScope::DefaultOnly,
                    _ => ActionScope::TableAndDefault,
                };
                Ok((r.id, scope))
            })
            .collect()
    }

    fn direct_resources(
        &self,
        table: &str,
        ids: &[u32],
    ) -> Result<(Option<u32>, Option<u32>), P4InfoError> {
        let (mut counter, mut meter) = (None, None);
        for &id in ids {
            match id >> 24 {
                x if x == Prefix::DirectCounter as u32
                    && self.direct_counters.contains_key(&id) =>
                {
                    counter = Some(id)
                }
                x if x == Prefix::DirectMeter as u32 => meter = Some(id),
                _ => {
                    return Err(invalid(format!(
                        "{table}: direct resource {id:#010x} does not exist"
                    )));
                }
            }
        }
        Ok((counter, meter))
    }

    fn check_direct_counters(&self) -> Result<(), P4InfoError> {
        for (id, table) in &self.direct_counters {
            let attached = self
                .tables
                .get(table)
                .is_some_and(|t| t.direct_counter == Some(*id));
            if !attached {
                return Err(invalid(format!(
                    "direct counter {id:#010x} names table {table:#010x}, which does not list it"
                )));
            }
        }
        Ok(())
    }

    fn add_packet_metadata(
        &mut self,
        p4info: &P4Info,
        seen: &mut HashSet<u32>,
    ) -> Result<(), P4InfoError> {
        for header in &p4info.controller_packet_metadata {
            let p = self.preamble(header.preamble.as_ref(), Prefix::ControllerHeader, seen)?;
            let mut fields = Vec::new();
            for m in &header.metadata {
                let what = format!("{} metadata {}", p.name, m.name);
                if m.id == 0 || fields.iter().any(|f: &ParamInfo| f.id == m.id) {
                    return Err(invalid(format!("{what} has a zero or repeated id")));
                }
                fields.push(ParamInfo {
                    id: m.id,
                    name: m.name.clone(),
                    bitwidth: width(m.bitwidth, &what)?,
                });
            }
            let info = PacketMetadataInfo {
                id: p.id,
                name: p.name.clone(),
                fields,
            };
            match p.name.as_str() {
                "packet_in" => self.packet_in = Some(info),
                "packet_out" => self.packet_out = Some(info),
                _ => {}
            }
        }
        Ok(())
    }

    pub fn table(&self, id: u32) -> Option<&TableInfo> {
        self.tables.get(&id)
    }

    /// Tables in P4Info order.
    pub fn tables(&self) -> impl Iterator<Item = &TableInfo> {
        self.table_order.iter().filter_map(|id| self.tables.get(id))
    }

    pub fn table_by_name(&self, name: TableName) -> Result<&TableInfo, P4InfoError> {
        self.names
            .get(&(Prefix::Table, name.as_str().to_string()))
            .and_then(|id| self.tables.get(id))
            .ok_or_else(|| P4InfoError::Missing {
                kind: "table",
                name: name.to_string(),
            })
    }

    pub fn action(&self, id: u32) -> Option<&ActionInfo> {
        self.actions.get(&id)
    }

    pub fn action_by_name(&self, name: ActionName) -> Result<&ActionInfo, P4InfoError> {
        self.names
            .get(&(Prefix::Action, name.as_str().to_string()))
            .and_then(|id| self.actions.get(id))
            .ok_or_else(|| P4InfoError::Missing {
                kind: "action",
                name: name.to_string(),
            })
    }

    pub fn counter(&self, id: u32) -> Option<&CounterInfo> {
        self.counters.get(&id)
    }

    pub fn counters(&self) -> impl Iterator<Item = &CounterInfo> {
        self.counters.values()
    }

    pub fn counter_by_name(&self, name: CounterName) -> Result<&CounterInfo, P4InfoError> {
        self.names
            .get(&(Prefix::Counter, name.as_str().to_string()))
            .and_then(|id| self.counters.get(id))
            .ok_or_else(|| P4InfoError::Missing {
                kind: "counter",
                name: name.to_string(),
            })
    }

    pub fn direct_counter_by_name(&self, name: CounterName) -> Result<(u32, u32), P4InfoError> {
        self.names
            .get(&(Prefix::DirectCounter, name.as_str().to_string()))
            .and_then(|id| self.direct_counters.get(id).map(|t| (*id, *t)))
            .ok_or_else(|| P4InfoError::Missing {
                kind: "direct counter",
                name: name.to_string(),
            })
    }

    pub fn register(&self, id: u32) -> Option<&RegisterInfo> {
        self.registers.get(&id)
    }

    pub fn registers(&self) -> impl Iterator<Item = &RegisterInfo> {
        self.registers.values()
    }

    pub fn register_by_name(&self, name: RegisterName) -> Result<&RegisterInfo, P4InfoError> {
        self.names
            .get(&(Prefix::Register, name.as_str().to_string()))
            .and_then(|id| self.registers.get(id))
            .ok_or_else(|| P4InfoError::Missing {
                kind: "register",
                name: name.to_string(),
            })
    }

    pub fn action_profile(&self, id: u32) -> Option<&ActionProfileInfo> {
        self.action_profiles.get(&id)
    }

    pub fn action_profiles(&self) -> impl Iterator<Item = &ActionProfileInfo> {
        self.action_profiles.values()
    }

    pub fn packet_in(&self) -> Option<&PacketMetadataInfo> {
        self.packet_in.as_ref()
    }

    pub fn packet_out(&self) -> Option<&PacketMetadataInfo> {
        self.packet_out.as_ref()
    }
}

fn table_fields(
    table: &str,
    fields: &[p4runtime_proto::p4::config::v1::MatchField],
) -> Result<Vec<FieldInfo>, P4InfoError> {
    let mut out: Vec<FieldInfo> = Vec::new();
    for f in fields {
        let what = format!("field {} of table {table}", f.name);
        if f.id == 0 || out.iter().any(|g| g.id == f.id) {
            return Err(invalid(format!("{what} has a zero or repeated id")));
        }
        let kind = match &f.r#match {
            Some(match_field::Match::MatchType(t)) => match match_field::MatchType::try_from(*t) {
                Ok(match_field::MatchType::Exact) => MatchKind::Exact,
                Ok(match_field::MatchType::Lpm) => MatchKind::Lpm,
                Ok(match_field::MatchType::Ternary) => MatchKind::Ternary,
                Ok(match_field::MatchType::Range) => MatchKind::Range,
                Ok(match_field::MatchType::Optional) => MatchKind::Optional,
                _ => return Err(invalid(format!("{what} has no match kind"))),
            },
            Some(match_field::Match::OtherMatchType(_)) => MatchKind::Other,
            None => return Err(invalid(format!("{what} has no match kind"))),
        };
        out.push(FieldInfo {
            id: f.id,
            name: f.name.clone(),
            bitwidth: width(f.bitwidth, &what)?,
            kind,
        });
    }
    Ok(out)
}
