//! The validation of what a controller writes or reads against the P4Info, as P4Runtime
//! prescribes and the profile narrows it: match fields (ids, kinds, widths, masks, prefix
//! lengths, ranges), priorities, actions and their parameters, profile references. Each
//! check returns the canonical form the tables keep.

use efb_p4info::{ActionScope, FieldInfo, MatchKind, P4InfoIndex, TableInfo};
use p4runtime_proto::p4::v1::{self as p4, field_match::FieldMatchType, table_action};

use crate::bytes::{self, cmp_be, to_u128};
use crate::error::TargetError;
use crate::profile::{Profile, STRATUM_TOFINO_MAX_PRIORITY};
use crate::tables::{ActionValue, Matcher, Objects, append_key};

/// A validated key: canonical field matches (by field id), matchers, and the store key.
pub struct Key {
    pub matches: Vec<p4::FieldMatch>,
    pub matchers: Vec<Matcher>,
    pub bytes: Vec<u8>,
}

/// Validates an entry's key (match fields and priority) as P4Runtime prescribes.
pub fn check_key(
    table: &TableInfo,
    matches: &[p4::FieldMatch],
    priority: i32,
    profile: Profile,
) -> Result<Key, TargetError> {
    check_priority(table, priority, profile)?;
    let mut by_pos: Vec<Option<(p4::FieldMatch, Matcher)>> = vec![None; table.fields.len()];
    for m in matches {
        let pos = table
            .fields
            .iter()
            .position(|f| f.id == m.field_id)
            .ok_or_else(|| {
                TargetError::invalid(format!(
                    "table {} has no match field id {}",
                    table.name, m.field_id
                ))
            })?;
        if by_pos[pos].is_some() {
            return Err(TargetError::invalid(format!(
                "match field {} given twice",
                table.fields[pos].name
            )));
        }
        let field = &table.fields[pos];
        let checked = check_field(field, pos, m, profile)
            .map_err(|e| e.context(format!("match field {}", field.name)))?;
        by_pos[pos] = Some(checked);
    }
    let mut key = Key {
        matches: Vec::new(),
        matchers: Vec::new(),
        bytes: priority.to_be_bytes().to_vec(),
    };
    for (pos, field) in table.fields.iter().enumerate() {
        match by_pos[pos].take() {
            Some((m, matcher)) => {
                append_key(&mut key.bytes, field, Some(&m));
                key.matches.push(m);
                key.matchers.push(matcher);
            }
            None if field.kind == MatchKind::Exact => {
                return Err(TargetError::invalid(format!(
                    "exact match field {} is missing",
                    field.name
                )));
            }
            None => append_key(&mut key.bytes, field, None),
        }
    }
    Ok(key)
}

fn check_priority(table: &TableInfo, priority: i32, profile: Profile) -> Result<(), TargetError> {
    if table.needs_priority() {
        if priority <= 0 {
            return Err(TargetError::invalid(format!(
                "table {} has ternary, range or optional fields: a priority above 0 is required (got {priority})",
                table.name
            )));
        }
        if profile.is_stratum() && priority > STRATUM_TOFINO_MAX_PRIORITY {
            return Err(TargetError::invalid(format!(
                "priority {priority} is 2^24 or more: Tofino's TCAM priorities are 24 bits"
            )));
        }
    } else if priority != 0 {
        return Err(TargetError::invalid(format!(
            "table {} has only exact fields: priority must be 0 (got {priority})",
            table.name
        )));
    }
    Ok(())
}

fn check_field(
    field: &FieldInfo,
    pos: usize,
    m: &p4::FieldMatch,
    profile: Profile,
) -> Result<(p4::FieldMatch, Matcher), TargetError> {
    let canonical = profile.canonical_bytes_required();
    let bits = field.bitwidth;
    let full = full_mask(bits);
    let kind_error = |given: &str| {
        TargetError::invalid(format!(
            "a {given} match on a {} field",
            field.kind.as_str()
        ))
    };
    let (fmt, matcher) = match (&m.field_match_type, field.kind) {
        (Some(FieldMatchType::Exact(e)), MatchKind::Exact) => {
            let v = bytes::check(&e.value, bits, canonical)?;
            let matcher = Matcher::Masked {
                pos,
                value: to_u128(&v),
                mask: full,
            };
            (
                FieldMatchType::Exact(p4::field_match::Exact { value: v }),
                matcher,
            )
        }
        (Some(FieldMatchType::Ternary(t)), MatchKind::Ternary) => {
            check_ternary(t, bits, pos, canonical)?
        }
        (Some(FieldMatchType::Lpm(l)), MatchKind::Lpm) => check_lpm(l, bits, pos, canonical)?,
        (Some(FieldMatchType::Range(r)), MatchKind::Range) => check_range(r, bits, pos, canonical)?,
        (Some(FieldMatchType::Optional(o)), MatchKind::Optional) => {
            if profile.is_stratum() {
                return Err(TargetError::invalid(
                    "the optional match kind is not supported on Tofino",
                ));
            }
            let v = bytes::check(&o.value, bits, canonical)?;
            let matcher = Matcher::Masked {
                pos,
                value: to_u128(&v),
                mask: full,
            };
            (
                FieldMatchType::Optional(p4::field_match::Optional { value: v }),
                matcher,
            )
        }
        (Some(FieldMatchType::Exact(_)), _) => return Err(kind_error("exact")),
        (Some(FieldMatchType::Ternary(_)), _) => return Err(kind_error("ternary")),
        (Some(FieldMatchType::Lpm(_)), _) => return Err(kind_error("lpm")),
        (Some(FieldMatchType::Range(_)), _) => return Err(kind_error("range")),
        (Some(FieldMatchType::Optional(_)), _) => return Err(kind_error("optional")),
        (Some(FieldMatchType::Other(_)), _) => {
            return Err(TargetError::unimplemented(
                "architecture-specific match kinds",
            ));
        }
        (None, _) => return Err(TargetError::invalid("no match value")),
    };
    Ok((
        p4::FieldMatch {
            field_id: m.field_id,
            field_match_type: Some(fmt),
        },
        matcher,
    ))
}

fn full_mask(bits: u32) -> u128 {
    if bits >= 128 {
        u128::MAX
    } else {
        (1u128 << bits) - 1
    }
}

fn check_ternary(
    t: &p4::field_match::Ternary,
    bits: u32,
    pos: usize,
    canonical: bool,
) -> Result<(FieldMatchType, Matcher), TargetError> {
    let value = bytes::check(&t.value, bits, canonical).map_err(|e| e.context("value"))?;
    let mask = bytes::check(&t.mask, bits, canonical).map_err(|e| e.context("mask"))?;
    let (v, m) = (to_u128(&value), to_u128(&mask));
    if m == 0 {
        return Err(TargetError::invalid(
            "mask is 0: a don't-care field must be left out",
        ));
    }
    if v & !m != 0 {
        return Err(TargetError::invalid(format!(
            "value 0x{} has bits outside mask 0x{}",
            bytes::hex(&value),
            bytes::hex(&mask)
        )));
    }
    let fmt = FieldMatchType::Ternary(p4::field_match::Ternary { value, mask });
    Ok((
        fmt,
        Matcher::Masked {
            pos,
            value: v,
            mask: m,
        },
    ))
}

fn check_lpm(
    l: &p4::field_match::Lpm,
    bits: u32,
    pos: usize,
    canonical: bool,
) -> Result<(FieldMatchType, Matcher), TargetError> {
    let value = bytes::check(&l.value, bits, canonical)?;
    let len = u32::try_from(l.prefix_len).unwrap_or(u32::MAX);
    if len == 0 {
        return Err(TargetError::invalid(
            "prefix length 0: a don't-care field must be left out",
        ));
    }
    if len > bits {
        return Err(TargetError::invalid(format!(
            "prefix length {len} exceeds the field's {bits} bits"
        )));
    }
    let mask = full_mask(bits) & !full_mask(bits - len);
    let v = to_u128(&value);
    if v & !mask != 0 {
        return Err(TargetError::invalid(format!(
            "value 0x{} has bits set past prefix length {len}",
            bytes::hex(&value)
        )));
    }
    let fmt = FieldMatchType::Lpm(p4::field_match::Lpm {
        value,
        prefix_len: l.prefix_len,
    });
    Ok((
        fmt,
        Matcher::Masked {
            pos,
            value: v,
            mask,
        },
    ))
}

fn check_range(
    r: &p4::field_match::Range,
    bits: u32,
    pos: usize,
    canonical: bool,
) -> Result<(FieldMatchType, Matcher), TargetError> {
    let low = bytes::check(&r.low, bits, canonical).map_err(|e| e.context("low"))?;
    let high = bytes::check(&r.high, bits, canonical).map_err(|e| e.context("high"))?;
    if cmp_be(&low, &high).is_gt() {
        return Err(TargetError::invalid(format!(
            "low 0x{} is above high 0x{}",
            bytes::hex(&low),
            bytes::hex(&high)
        )));
    }
    let (l, h) = (to_u128(&low), to_u128(&high));
    if l == 0 && h == full_mask(bits) {
        return Err(TargetError::invalid(
            "the range covers every value: a don't-care field must be left out",
        ));
    }
    let fmt = FieldMatchType::Range(p4::field_match::Range { low, high });
    Ok((
        fmt,
        Matcher::Range {
            pos,
            low: l,
            high: h,
        },
    ))
}

/// Where an action is used: in an entry, or as the table's default.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ActionUse {
    Entry,
    Default,
}

/// Validates a direct action for a table: known action of the table, allowed in this
/// use, every parameter exactly once and within its width. Returns its canonical form.
pub fn check_action(
    index: &P4InfoIndex,
    table: &TableInfo,
    action: &p4::Action,
    usage: ActionUse,
    profile: Profile,
) -> Result<(p4::Action, ActionValue), TargetError> {
    let scope = table.action_scope(action.action_id).ok_or_else(|| {
        TargetError::invalid(format!(
            "action id {} is not an action of table {}",
            action.action_id, table.name
        ))
    })?;
    let info = index
        .action(action.action_id)
        .ok_or_else(|| TargetError::invalid(format!("unknown action id {}", action.action_id)))?;
    match (usage, scope) {
        (ActionUse::Entry, ActionScope::DefaultOnly) => {
            return Err(TargetError::permission(format!(
                "action {} may only be the default action of {}",
                info.name, table.name
            )));
        }
        (ActionUse::Default, ActionScope::TableOnly) => {
            return Err(TargetError::permission(format!(
                "action {} may not be the default action of {}",
                info.name, table.name
            )));
        }
        _ => {}
    }
    check_params(info, action, profile)
}

/// Validates an action's parameters against its P4Info description.
pub fn check_params(
    info: &efb_p4info::ActionInfo,
    action: &p4::Action,
    profile: Profile,
) -> Result<(p4::Action, ActionValue), TargetError> {
    let mut values: Vec<Option<Vec<u8>>> = vec![None; info.params.len()];
    for p in &action.params {
        let pos = info
            .params
            .iter()
            .position(|q| q.id == p.param_id)
            .ok_or_else(|| {
                TargetError::invalid(format!(
                    "action {} has no parameter id {}",
                    info.name, p.param_id
                ))
            })?;
        if values[pos].is_some() {
            return Err(TargetError::invalid(format!(
                "parameter {} given twice",
                info.params[pos].name
            )));
        }
        let param = &info.params[pos];
        let v = bytes::check(&p.value, param.bitwidth, profile.canonical_bytes_required())
            .map_err(|e| e.context(format!("parameter {} of {}", param.name, info.name)))?;
        values[pos] = Some(v);
    }
    let mut canonical = p4::Action {
        action_id: action.action_id,
        params: Vec::new(),
    };
    let mut numbers = Vec::new();
    for (param, value) in info.params.iter().zip(values) {
        let value = value.ok_or_else(|| {
            TargetError::invalid(format!(
                "parameter {} of {} is missing",
                param.name, info.name
            ))
        })?;
        numbers.push(to_u128(&value));
        canonical.params.push(p4::action::Param {
            param_id: param.id,
            value,
        });
    }
    Ok((
        canonical,
        ActionValue::Direct {
            action_id: action.action_id,
            params: numbers,
        },
    ))
}

/// Validates the action part of an entry: the kind must fit the table (direct or
/// through an action profile), and profile references must exist.
pub fn check_table_action(
    index: &P4InfoIndex,
    objects: &Objects,
    table: &TableInfo,
    action: &p4::TableAction,
    profile: Profile,
) -> Result<(p4::TableAction, ActionValue), TargetError> {
    let kind = action
        .r#type
        .as_ref()
        .ok_or_else(|| TargetError::invalid("the action is empty"))?;
    match (kind, table.implementation_id) {
        (table_action::Type::Action(a), None) => {
            let (canonical, value) = check_action(index, table, a, ActionUse::Entry, profile)?;
            Ok((
                p4::TableAction {
                    r#type: Some(table_action::Type::Action(canonical)),
                },
                value,
            ))
        }
        (table_action::Type::ActionProfileMemberId(id), Some(profile_id)) => {
            if !objects.members.contains_key(&(profile_id, *id)) {
                return Err(TargetError::not_found(format!(
                    "action profile member {id} does not exist"
                )));
            }
            Ok((action.clone(), ActionValue::Member(*id)))
        }
        (table_action::Type::ActionProfileGroupId(id), Some(profile_id)) => {
            let selector = index
                .action_profile(profile_id)
                .is_some_and(|p| p.with_selector);
            if !selector {
                return Err(TargetError::invalid(format!(
                    "table {} has no selector: groups are not allowed",
                    table.name
                )));
            }
            if !objects.groups.contains_key(&(profile_id, *id)) {
                return Err(TargetError::not_found(format!(
                    "action profile group {id} does not exist"
                )));
            }
            Ok((action.clone(), ActionValue::Group(*id)))
        }
        (table_action::Type::ActionProfileActionSet(_), Some(_)) => Err(
            TargetError::unimplemented("one-shot action selector programming"),
        ),
        (_, None) => Err(TargetError::invalid(format!(
            "table {} is direct: it takes an action, not a profile reference",
            table.name
        ))),
        (_, Some(_)) => Err(TargetError::invalid(format!(
            "table {} is indirect: it takes a member or group id",
            table.name
        ))),
    }
}
