//! Table entries built by name through the P4Info (never by hard-coded id), in the canonical
//! form targets expect, and keyed the way targets identify them: table, match, priority.

use efb_p4info::names::{ActionName, FieldName, TableName};
use efb_p4info::{MatchKind, P4InfoError, P4InfoIndex};
use p4runtime_proto::p4::v1::{self as p4, field_match::FieldMatchType};
use prost::Message;

/// The shortest big-endian byte string of a number (P4Runtime's canonical form).
pub fn canonical(value: u128) -> Vec<u8> {
    let bytes = value.to_be_bytes();
    let first = bytes.iter().position(|b| *b != 0).unwrap_or(15);
    bytes[first..].to_vec()
}

/// A byte string in canonical form (targets may answer zero-padded ones).
pub fn normalize(bytes: &[u8]) -> Vec<u8> {
    let first = bytes
        .iter()
        .position(|b| *b != 0)
        .unwrap_or(bytes.len().saturating_sub(1));
    bytes
        .get(first..)
        .map(<[u8]>::to_vec)
        .unwrap_or_else(|| vec![0])
}

/// One match criterion, by field name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Criterion {
    Exact(u128),
    /// Value and mask; bits outside the mask are cleared.
    Ternary(u128, u128),
    /// Inclusive bounds.
    Range(u128, u128),
}

/// Builds entries of one P4Info.
pub struct Builder<'a> {
    pub index: &'a P4InfoIndex,
}

#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error(transparent)]
    P4Info(#[from] P4InfoError),
    #[error("{table}: no field {field}")]
    NoField { table: TableName, field: FieldName },
    #[error("{action}: no parameter {param}")]
    NoParam {
        action: ActionName,
        param: FieldName,
    },
    #[error("{table}: field {field} is {kind}: it cannot hold this criterion")]
    Kind {
        table: TableName,
        field: FieldName,
        kind: &'static str,
    },
}

/// A configured priority as the chip takes it: the chip wants priorities above 0, so one
/// more (saturating at the largest the field holds).
pub fn chip_priority(priority: u32) -> i32 {
    i32::try_from(priority).unwrap_or(i32::MAX - 1) + 1
}

impl Builder<'_> {
    /// An entry of `table` matching `criteria` (don't-care criteria left out), with an
    /// action and its parameters. `priority` only for tables with ternary or range fields.
    pub fn entry(
        &self,
        table: TableName,
        criteria: &[(FieldName, Criterion)],
        priority: i32,
        action: ActionName,
        params: &[(FieldName, u128)],
    ) -> Result<p4::TableEntry, EntryError> {
        let info = self.index.table_by_name(table)?;
        let mut matches = Vec::with_capacity(criteria.len());
        for &(name, ref criterion) in criteria {
            let field = info
                .field(name)
                .ok_or(EntryError::NoField { table, field: name })?;
            let matched = field_match(field, criterion).map_err(|kind| EntryError::Kind {
                table,
                field: name,
                kind: kind.as_str(),
            })?;
            matches.extend(matched);
        }
        matches.sort_by_key(|m| m.field_id);
        Ok(p4::TableEntry {
            table_id: info.id,
            r#match: matches,
            action: Some(self.action(action, params)?),
            priority,
            ..Default::default()
        })
    }

    /// The default entry of a table (keyless tables have nothing else).
    pub fn default_entry(
        &self,
        table: TableName,
        action: ActionName,
        params: &[(FieldName, u128)],
    ) -> Result<p4::TableEntry, EntryError> {
        let info = self.index.table_by_name(table)?;
        Ok(p4::TableEntry {
            table_id: info.id,
            action: Some(self.action(action, params)?),
            is_default_action: true,
            ..Default::default()
        })
    }

    fn action(
        &self,
        name: ActionName,
        params: &[(FieldName, u128)],
    ) -> Result<p4::TableAction, EntryError> {
        let info = self.index.action_by_name(name)?;
        let mut out = Vec::with_capacity(params.len());
        for &(param, value) in params {
            let p = info.param(param).ok_or(EntryError::NoParam {
                action: name,
                param,
            })?;
            out.push(p4::action::Param {
                param_id: p.id,
                value: canonical(value & mask_of(p.bitwidth)),
            });
        }
        out.sort_by_key(|p| p.param_id);
        Ok(p4::TableAction {
            r#type: Some(p4::table_action::Type::Action(p4::Action {
                action_id: info.id,
                params: out,
            })),
        })
    }
}

/// The shape of entries with exact keys, resolved through the P4Info once and filled with
/// values many times: a bucket table's thousands of entries differ only in values, and
/// building each by name cost 0.7 us of a rebalance's 8 192.
#[derive(Clone, Debug)]
pub struct ExactShape {
    table_id: u32,
    /// (field id, mask) in the order the fields were named.
    fields: Vec<(u32, u128)>,
    action_id: u32,
    /// (parameter id, mask) in the order the parameters were named.
    params: Vec<(u32, u128)>,
}

impl Builder<'_> {
    /// The shape of `table`'s entries keyed by the exact `fields`, with `action` and its
    /// `params`, as [`Builder::entry`] builds them.
    pub fn exact_shape(
        &self,
        table: TableName,
        fields: &[FieldName],
        action: ActionName,
        params: &[FieldName],
    ) -> Result<ExactShape, EntryError> {
        let info = self.index.table_by_name(table)?;
        let fields: Vec<(u32, u128)> = fields
            .iter()
            .map(|&name| {
                let field = info
                    .field(name)
                    .ok_or(EntryError::NoField { table, field: name })?;
                if field.kind != MatchKind::Exact {
                    return Err(EntryError::Kind {
                        table,
                        field: name,
                        kind: field.kind.as_str(),
                    });
                }
                Ok((field.id, mask_of(field.bitwidth)))
            })
            .collect::<Result<_, EntryError>>()?;
        let action_info = self.index.action_by_name(action)?;
        let params: Vec<(u32, u128)> = params
            .iter()
            .map(|&name| {
                let p = action_info.param(name).ok_or(EntryError::NoParam {
                    action,
                    param: name,
                })?;
                Ok((p.id, mask_of(p.bitwidth)))
            })
            .collect::<Result<_, EntryError>>()?;
        Ok(ExactShape {
            table_id: info.id,
            fields,
            action_id: action_info.id,
            params,
        })
    }
}

impl ExactShape {
    /// The entry with these key values and parameter values (in the order of the names the
    /// shape was made with).
    pub fn entry(&self, keys: &[u128], params: &[u128]) -> p4::TableEntry {
        let mut r#match: Vec<p4::FieldMatch> = self
            .fields
            .iter()
            .zip(keys)
            .map(|((id, mask), value)| p4::FieldMatch {
                field_id: *id,
                field_match_type: Some(FieldMatchType::Exact(p4::field_match::Exact {
                    value: canonical(value & mask),
                })),
            })
            .collect();
        r#match.sort_by_key(|m| m.field_id);
        let mut params: Vec<p4::action::Param> = self
            .params
            .iter()
            .zip(params)
            .map(|((id, mask), value)| p4::action::Param {
                param_id: *id,
                value: canonical(value & mask),
            })
            .collect();
        params.sort_by_key(|p| p.param_id);
        p4::TableEntry {
            table_id: self.table_id,
            r#match,
            action: Some(p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(p4::Action {
                    action_id: self.action_id,
                    params,
                })),
            }),
            ..Default::default()
        }
    }
}

fn mask_of(bitwidth: u32) -> u128 {
    if bitwidth >= 128 {
        u128::MAX
    } else {
        (1u128 << bitwidth) - 1
    }
}

/// The field match, `None` for a criterion that matches everything (targets refuse
/// explicit don't-cares), or `Err` for a criterion the field's kind cannot express (left
/// out, it would widen the entry to every value).
fn field_match(
    field: &efb_p4info::FieldInfo,
    criterion: &Criterion,
) -> Result<Option<p4::FieldMatch>, MatchKind> {
    let full = mask_of(field.bitwidth);
    let kind = match (field.kind, criterion) {
        (MatchKind::Exact, Criterion::Exact(v)) => {
            Some(FieldMatchType::Exact(p4::field_match::Exact {
                value: canonical(v & full),
            }))
        }
        (MatchKind::Ternary, Criterion::Exact(v)) => ternary(v & full, full),
        (MatchKind::Ternary, Criterion::Ternary(v, m)) => ternary(v & m & full, m & full),
        (MatchKind::Range, Criterion::Exact(v)) => range(*v, *v, full),
        (MatchKind::Range, Criterion::Range(lo, hi)) => range(*lo, *hi, full),
        (kind, _) => return Err(kind),
    };
    Ok(kind.map(|kind| p4::FieldMatch {
        field_id: field.id,
        field_match_type: Some(kind),
    }))
}

fn ternary(value: u128, mask: u128) -> Option<FieldMatchType> {
    (mask != 0).then(|| {
        FieldMatchType::Ternary(p4::field_match::Ternary {
            value: canonical(value),
            mask: canonical(mask),
        })
    })
}

fn range(lo: u128, hi: u128, full: u128) -> Option<FieldMatchType> {
    (!(lo == 0 && hi >= full)).then(|| {
        FieldMatchType::Range(p4::field_match::Range {
            low: canonical(lo),
            high: canonical(hi.min(full)),
        })
    })
}

/// How targets identify an entry: table, match, priority (a default entry by its table).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryKey {
    pub table_id: u32,
    pub default: bool,
    pub priority: i32,
    pub matches: Vec<u8>,
}

impl EntryKey {
    pub fn of(entry: &p4::TableEntry) -> EntryKey {
        let mut matches: Vec<p4::FieldMatch> = entry.r#match.clone();
        matches.sort_by_key(|m| m.field_id);
        let mut bytes = Vec::new();
        for m in &matches {
            m.encode(&mut bytes).unwrap_or_default();
        }
        EntryKey {
            table_id: entry.table_id,
            default: entry.is_default_action,
            priority: entry.priority,
            matches: bytes,
        }
    }
}

/// An entry as read back from a target, in the form we write: canonical byte strings,
/// fields and parameters in id order, nothing but key and action.
pub fn normalized(entry: &p4::TableEntry) -> p4::TableEntry {
    let mut matches: Vec<p4::FieldMatch> = entry.r#match.iter().map(normalize_match).collect();
    matches.sort_by_key(|m| m.field_id);
    let action = entry.action.as_ref().map(|a| match &a.r#type {
        Some(p4::table_action::Type::Action(action)) => {
            let mut params: Vec<p4::action::Param> = action
                .params
                .iter()
                .map(|p| p4::action::Param {
                    param_id: p.param_id,
                    value: normalize(&p.value),
                })
                .collect();
            params.sort_by_key(|p| p.param_id);
            p4::TableAction {
                r#type: Some(p4::table_action::Type::Action(p4::Action {
                    action_id: action.action_id,
                    params,
                })),
            }
        }
        _ => a.clone(),
    });
    p4::TableEntry {
        table_id: entry.table_id,
        r#match: matches,
        action,
        priority: entry.priority,
        is_default_action: entry.is_default_action,
        ..Default::default()
    }
}

fn normalize_match(m: &p4::FieldMatch) -> p4::FieldMatch {
    use p4::field_match as fm;
    let kind = m.field_match_type.as_ref().map(|k| match k {
        FieldMatchType::Exact(e) => FieldMatchType::Exact(fm::Exact {
            value: normalize(&e.value),
        }),
        FieldMatchType::Ternary(t) => FieldMatchType::Ternary(fm::Ternary {
            value: normalize(&t.value),
            mask: normalize(&t.mask),
        }),
        FieldMatchType::Lpm(l) => FieldMatchType::Lpm(fm::Lpm {
            value: normalize(&l.value),
            prefix_len: l.prefix_len,
        }),
        FieldMatchType::Range(r) => FieldMatchType::Range(fm::Range {
            low: normalize(&r.low),
            high: normalize(&r.high),
        }),
        FieldMatchType::Optional(o) => FieldMatchType::Optional(fm::Optional {
            value: normalize(&o.value),
        }),
        other => other.clone(),
    });
    p4::FieldMatch {
        field_id: m.field_id,
        field_match_type: kind,
    }
}

/// One line for people and golden files: `flows prio 311 ip_proto=0x06&&&0xff -> bypass()`.
pub fn describe(index: &P4InfoIndex, entry: &p4::TableEntry) -> String {
    let table = index.table(entry.table_id);
    let table_name = table.map_or("?", |t| t.alias.as_str());
    let mut out = table_name.to_string();
    if entry.is_default_action {
        out.push_str(" default");
    }
    if entry.priority != 0 {
        out.push_str(&format!(" prio {}", entry.priority));
    }
    for m in &entry.r#match {
        let name = table
            .and_then(|t| t.field_by_id(m.field_id))
            .map_or("?", |f| f.name.as_str());
        let value = match &m.field_match_type {
            Some(FieldMatchType::Exact(e)) => hex(&e.value),
            Some(FieldMatchType::Ternary(t)) => format!("{}&&&{}", hex(&t.value), hex(&t.mask)),
            Some(FieldMatchType::Range(r)) => format!("{}..{}", hex(&r.low), hex(&r.high)),
            Some(FieldMatchType::Lpm(l)) => format!("{}/{}", hex(&l.value), l.prefix_len),
            _ => "?".to_string(),
        };
        out.push_str(&format!(" {name}={value}"));
    }
    if let Some(p4::TableAction {
        r#type: Some(p4::table_action::Type::Action(action)),
    }) = &entry.action
    {
        let info = index.action(action.action_id);
        let params: Vec<String> = action
            .params
            .iter()
            .map(|p| {
                let name = info
                    .and_then(|a| a.params.iter().find(|x| x.id == p.param_id))
                    .map_or("?", |x| x.name.as_str());
                format!("{name}={}", hex(&p.value))
            })
            .collect();
        out.push_str(&format!(
            " -> {}({})",
            info.map_or("?", |a| a.alias.as_str()),
            params.join(", ")
        ));
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    let digits: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("0x{digits}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use efb_p4info::names::fields as f;

    #[test]
    fn canonical_bytes_are_the_shortest() {
        assert_eq!(canonical(0), vec![0]);
        assert_eq!(canonical(0x0102), vec![1, 2]);
        assert_eq!(normalize(&[0, 0, 7]), vec![7]);
        assert_eq!(normalize(&[0, 0]), vec![0]);
    }

    #[test]
    fn a_shape_filled_is_the_entry_built_by_name() {
        let index = efb_p4info::index().unwrap();
        let b = Builder { index: &index };
        let (t, index, a) = (
            efb_p4info::names::tables::BUCKETS,
            efb_p4info::names::fields::INDEX,
            efb_p4info::names::actions::TO_PAIR,
        );
        let (pair, core) = (
            efb_p4info::names::fields::PAIR_ID,
            efb_p4info::names::fields::CORE,
        );
        let shape = b.exact_shape(t, &[index], a, &[pair, core]).unwrap();
        for (slot, pair_id, core_no) in [(262_143, 17, 31), (0, 0, 0), (8448, 255, 1)] {
            let by_name = b
                .entry(
                    t,
                    &[(index, Criterion::Exact(slot))],
                    0,
                    a,
                    &[(pair, pair_id), (core, core_no)],
                )
                .unwrap();
            assert_eq!(shape.entry(&[slot], &[pair_id, core_no]), by_name);
        }
        assert!(matches!(
            b.exact_shape(t, &[f::IPV4_SRC], a, &[]),
            Err(EntryError::NoField { .. })
        ));
    }

    #[test]
    fn dont_care_criteria_are_left_out() {
        let index = efb_p4info::index().unwrap();
        let b = Builder { index: &index };
        let flows = efb_p4info::names::flows::IPV4;
        let e = b
            .entry(
                flows.table,
                &[
                    (f::IP_PROTO, Criterion::Ternary(6, 0xff)),
                    (f::L4_DST_PORT, Criterion::Ternary(1024, 0)),
                    (f::IPV4_SRC, Criterion::Ternary(0, 0)),
                ],
                10,
                flows.bypass,
                &[],
            )
            .unwrap();
        assert_eq!(e.r#match.len(), 1, "zero masks are don't-cares");
        assert_eq!(normalized(&e), e, "what we build is already normalized");
    }

    #[test]
    fn an_exact_criterion_on_a_ternary_field_is_its_full_mask() {
        let index = efb_p4info::index().unwrap();
        let b = Builder { index: &index };
        let flows = efb_p4info::names::flows::IPV4;
        let e = b
            .entry(
                flows.table,
                &[(f::L4_DST_PORT, Criterion::Exact(0x1_00b3))],
                10,
                flows.bypass,
                &[],
            )
            .unwrap();
        let expected = FieldMatchType::Ternary(p4::field_match::Ternary {
            value: vec![0xb3],
            mask: vec![0xff, 0xff],
        });
        assert_eq!(e.r#match.len(), 1);
        assert_eq!(
            e.r#match[0].field_match_type,
            Some(expected),
            "cut to the field's 16 bits, in canonical bytes"
        );
    }

    /// Range fields are gone from efb.p4 (its TCAM keys are ternary), but a program that
    /// has them gets the same treatment: the full range is a don't-care.
    #[test]
    fn a_full_range_is_left_out_on_a_range_field() {
        let p4info = efb_p4info::p4info_from_text(
            r#"
tables { preamble { id: 33554540 name: "t_range" alias: "t_range" }
  match_fields { id: 1 name: "port" bitwidth: 16 match_type: RANGE }
  match_fields { id: 2 name: "proto" bitwidth: 8 match_type: RANGE }
  action_refs { id: 16777326 } size: 16 }
actions { preamble { id: 16777326 name: "hit" alias: "hit" } }
"#,
        )
        .unwrap();
        let index = P4InfoIndex::new(&p4info).unwrap();
        let table = index.table(33554540).unwrap();
        let criterion = |field_id: u32, lo: u128, hi: u128| {
            let field = table.field_by_id(field_id).unwrap();
            field_match(field, &Criterion::Range(lo, hi)).unwrap()
        };
        assert_eq!(criterion(1, 0, 65535), None, "the full range is left out");
        let proto = criterion(2, 6, 17).unwrap();
        assert_eq!(proto.field_id, 2);
        let expected = FieldMatchType::Range(p4::field_match::Range {
            low: vec![6],
            high: vec![17],
        });
        assert_eq!(proto.field_match_type, Some(expected));
    }
}
