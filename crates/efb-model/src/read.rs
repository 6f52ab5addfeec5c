//! Reading the typed configuration out of a data tree. Node ids are resolved once per schema
//! ([`ModelIds`]); defaults come from the schema, not from this code.

use std::collections::BTreeMap;
use std::sync::Arc;

use efb_yang::{Child, DataTree, Inner, Keys, RecordKey, Schema, SchemaId};

use crate::paths;
use crate::types::*;

/// Why a tree could not be read as a configuration (a value that libyang accepted but the
/// model does not understand: a bug, or a store written by another model).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ReadError {
    pub path: String,
    pub message: String,
}

/// Schema ids of every configuration node the typed model reads.
#[derive(Debug)]
pub struct ModelIds {
    ports: SchemaId,
    port: SchemaId,
    port_number: SchemaId,
    port_lane: SchemaId,
    port_speed: SchemaId,
    port_mtu: SchemaId,
    port_description: SchemaId,
    port_enabled: SchemaId,
    balancer: SchemaId,
    method: SchemaId,
    link: SchemaId,
    link_lan: SchemaId,
    link_wan: SchemaId,
    link_description: SchemaId,
    unit: SchemaId,
    unit_cores: SchemaId,
    unit_profile: SchemaId,
    unit_rebalance: SchemaId,
    unit_description: SchemaId,
    pair: SchemaId,
    pair_lan: SchemaId,
    pair_wan: SchemaId,
    pair_description: SchemaId,
    flow: SchemaId,
    flow_priority: SchemaId,
    flow_direction: SchemaId,
    flow_links: SchemaId,
    flow_description: SchemaId,
    flow_match: SchemaId,
    m_vlan: [SchemaId; 3],
    m_vlan_depth: SchemaId,
    m_mpls_depth: SchemaId,
    m_src_ipv4: SchemaId,
    m_dst_ipv4: SchemaId,
    m_src_ipv6: SchemaId,
    m_dst_ipv6: SchemaId,
    m_ip_proto: SchemaId,
    m_src_port: SchemaId,
    m_dst_port: SchemaId,
    m_src_mac: SchemaId,
    m_src_mac_mask: SchemaId,
    m_dst_mac: SchemaId,
    m_dst_mac_mask: SchemaId,
    m_packet_type: SchemaId,
    m_llc_dsap: SchemaId,
    m_llc_ssap: SchemaId,
    flow_action: SchemaId,
    a_bypass: SchemaId,
    a_drop: SchemaId,
    a_to_unit: SchemaId,
    a_unit: SchemaId,
    liveness: SchemaId,
    profile: SchemaId,
    p_initial_delay: SchemaId,
    p_interval: SchemaId,
    p_round_timeout: SchemaId,
    p_down: SchemaId,
    p_up: SchemaId,
    p_active_pairs: SchemaId,
    p_description: SchemaId,
    /// Every node resolved above, for the test that no configuration node goes unread.
    read: Vec<SchemaId>,
}

impl ModelIds {
    pub fn new(schema: &Schema) -> Result<ModelIds, ReadError> {
        let mut read = Vec::new();
        let mut id = |path: &str| -> Result<SchemaId, ReadError> {
            let id = schema.find(path).ok_or_else(|| ReadError {
                path: path.to_string(),
                message: "the schema has no such node, but the model reads it".to_string(),
            })?;
            read.push(id);
            Ok(id)
        };
        let m = "/ecofilter-balancer/flow/match";
        let ids = ModelIds {
            ports: id("/ports")?,
            port: id("/ports/port")?,
            port_number: id("/ports/port/number")?,
            port_lane: id("/ports/port/lane")?,
            port_speed: id("/ports/port/speed")?,
            port_mtu: id("/ports/port/mtu")?,
            port_description: id("/ports/port/description")?,
            port_enabled: id("/ports/port/enabled")?,
            balancer: id("/ecofilter-balancer")?,
            method: id("/ecofilter-balancer/balancing-method")?,
            link: id("/ecofilter-balancer/link")?,
            link_lan: id("/ecofilter-balancer/link/lan-port")?,
            link_wan: id("/ecofilter-balancer/link/wan-port")?,
            link_description: id("/ecofilter-balancer/link/description")?,
            unit: id("/ecofilter-balancer/ecofilter-unit")?,
            unit_cores: id("/ecofilter-balancer/ecofilter-unit/cores")?,
            unit_profile: id("/ecofilter-balancer/ecofilter-unit/liveness-profile")?,
            unit_rebalance: id("/ecofilter-balancer/ecofilter-unit/rebalance")?,
            unit_description: id("/ecofilter-balancer/ecofilter-unit/description")?,
            pair: id("/ecofilter-balancer/ecofilter-unit/pair")?,
            pair_lan: id("/ecofilter-balancer/ecofilter-unit/pair/lan-port")?,
            pair_wan: id("/ecofilter-balancer/ecofilter-unit/pair/wan-port")?,
            pair_description: id("/ecofilter-balancer/ecofilter-unit/pair/description")?,
            flow: id("/ecofilter-balancer/flow")?,
            flow_priority: id("/ecofilter-balancer/flow/priority")?,
            flow_direction: id("/ecofilter-balancer/flow/direction")?,
            flow_links: id("/ecofilter-balancer/flow/links")?,
            flow_description: id("/ecofilter-balancer/flow/description")?,
            flow_match: id(m)?,
            m_vlan: [
                id(&format!("{m}/vlan0-tag"))?,
                id(&format!("{m}/vlan1-tag"))?,
                id(&format!("{m}/vlan2-tag"))?,
            ],
            m_vlan_depth: id(&format!("{m}/vlan-depth"))?,
            m_mpls_depth: id(&format!("{m}/mpls-depth"))?,
            m_src_ipv4: id(&format!("{m}/src-ipv4"))?,
            m_dst_ipv4: id(&format!("{m}/dst-ipv4"))?,
            m_src_ipv6: id(&format!("{m}/src-ipv6"))?,
            m_dst_ipv6: id(&format!("{m}/dst-ipv6"))?,
            m_ip_proto: id(&format!("{m}/ip-proto"))?,
            m_src_port: id(&format!("{m}/src-port"))?,
            m_dst_port: id(&format!("{m}/dst-port"))?,
            m_src_mac: id(&format!("{m}/src-mac"))?,
            m_src_mac_mask: id(&format!("{m}/src-mac-mask"))?,
            m_dst_mac: id(&format!("{m}/dst-mac"))?,
            m_dst_mac_mask: id(&format!("{m}/dst-mac-mask"))?,
            m_packet_type: id(&format!("{m}/packet-type"))?,
            m_llc_dsap: id(&format!("{m}/llc-dsap"))?,
            m_llc_ssap: id(&format!("{m}/llc-ssap"))?,
            flow_action: id("/ecofilter-balancer/flow/action")?,
            a_bypass: id("/ecofilter-balancer/flow/action/bypass")?,
            a_drop: id("/ecofilter-balancer/flow/action/drop")?,
            a_to_unit: id("/ecofilter-balancer/flow/action/to-ecofilter")?,
            a_unit: id("/ecofilter-balancer/flow/action/to-ecofilter/ecofilter-unit")?,
            liveness: id("/liveness")?,
            profile: id("/liveness/profile")?,
            p_initial_delay: id("/liveness/profile/initial-delay")?,
            p_interval: id("/liveness/profile/interval")?,
            p_round_timeout: id("/liveness/profile/round-timeout")?,
            p_down: id("/liveness/profile/probes-down-count")?,
            p_up: id("/liveness/profile/probes-up-count")?,
            p_active_pairs: id("/liveness/profile/active-pairs")?,
            p_description: id("/liveness/profile/description")?,
            read: Vec::new(),
        };
        Ok(ModelIds { read, ..ids })
    }

    /// Nodes the typed model reads (list keys are read with their entries).
    pub fn read_nodes(&self) -> &[SchemaId] {
        &self.read
    }

    pub fn flow_list(&self) -> SchemaId {
        self.flow
    }

    pub fn port_list(&self) -> SchemaId {
        self.port
    }
}

/// Reads leaves of one inner node, falling back to schema defaults.
struct Leaves<'a> {
    schema: &'a Schema,
    inner: &'a Inner,
    path: &'a dyn Fn() -> String,
}

impl Leaves<'_> {
    fn text(&self, id: SchemaId) -> Option<&str> {
        match self.inner.leaf(id) {
            Some(v) => Some(v.as_str()),
            None => self.schema.node(id).default.as_deref(),
        }
    }

    fn string(&self, id: SchemaId) -> Option<String> {
        self.inner.leaf(id).map(|v| v.as_str().to_string())
    }

    fn parse<T: std::str::FromStr>(&self, id: SchemaId) -> Result<Option<T>, ReadError> {
        match self.text(id) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| self.bad(id, text)),
        }
    }

    fn required<T: std::str::FromStr>(&self, id: SchemaId) -> Result<T, ReadError> {
        self.parse(id)?.ok_or_else(|| ReadError {
            path: format!("{}/{}", (self.path)(), self.schema.node(id).name),
            message: "missing".to_string(),
        })
    }

    fn with<T>(&self, id: SchemaId, f: impl Fn(&str) -> Option<T>) -> Result<Option<T>, ReadError> {
        match self.text(id) {
            None => Ok(None),
            Some(text) => f(text).map(Some).ok_or_else(|| self.bad(id, text)),
        }
    }

    fn bad(&self, id: SchemaId, text: &str) -> ReadError {
        ReadError {
            path: format!("{}/{}", (self.path)(), self.schema.node(id).name),
            message: format!("cannot read value \"{text}\""),
        }
    }
}

fn key_name(keys: &Keys) -> String {
    keys.first()
        .map(|k| k.as_str().to_string())
        .unwrap_or_default()
}

/// Reads the whole configuration.
pub fn read_config(schema: &Schema, ids: &ModelIds, tree: &DataTree) -> Result<Config, ReadError> {
    let mut config = read_small_parts(schema, ids, tree)?;
    if let Some(flows) = tree
        .root()
        .container(ids.balancer)
        .and_then(|b| b.list(ids.flow))
    {
        for (keys, entry) in flows.iter() {
            let flow = read_flow(schema, ids, &key_name(keys), entry)?;
            config.flows.insert(flow.name.clone(), Arc::new(flow));
        }
    }
    Ok(config)
}

/// Reads `tree` knowing that it differs from the tree `previous` was read from only in
/// `changed` records: flows are re-read one by one, everything else (small) entirely.
pub fn update_config(
    schema: &Schema,
    ids: &ModelIds,
    previous: &Config,
    tree: &DataTree,
    changed: &[RecordKey],
) -> Result<Config, ReadError> {
    let flows_only = changed
        .iter()
        .all(|r| r.entry().is_some_and(|(list, _)| list == ids.flow));
    let mut config = if flows_only {
        Config {
            flows: imbl::OrdMap::new(),
            ..previous.clone()
        }
    } else {
        read_small_parts(schema, ids, tree)?
    };
    config.flows = previous.flows.clone();
    let flows = tree
        .root()
        .container(ids.balancer)
        .and_then(|b| b.list(ids.flow));
    for record in changed {
        let Some((list, keys)) = record.entry() else {
            continue;
        };
        if list != ids.flow {
            continue;
        }
        let name = keys
            .first()
            .map(|k| k.as_str().to_string())
            .unwrap_or_default();
        match flows.and_then(|f| f.get(keys)) {
            Some(entry) => {
                let flow = read_flow(schema, ids, &name, entry)?;
                config.flows.insert(name, Arc::new(flow));
            }
            None => {
                config.flows.remove(&name);
            }
        }
    }
    Ok(config)
}

/// Everything but the flows.
fn read_small_parts(schema: &Schema, ids: &ModelIds, tree: &DataTree) -> Result<Config, ReadError> {
    let root = tree.root();
    let mut config = Config::default();
    let empty = Inner::default();
    let balancer = root.container(ids.balancer).unwrap_or(&empty);
    let top = Leaves {
        schema,
        inner: balancer,
        path: &|| "/ecofilter-balancer:ecofilter-balancer".to_string(),
    };
    config.balancing_method = top
        .with(ids.method, BalancingMethod::parse)?
        .unwrap_or_default();
    if let Some(ports) = root.container(ids.ports).and_then(|p| p.list(ids.port)) {
        for (keys, entry) in ports.iter() {
            let port = read_port(schema, ids, &key_name(keys), entry)?;
            config.ports.insert(port.name.clone(), port);
        }
    }
    for (keys, entry) in entries(balancer, ids.link) {
        let name = key_name(keys);
        let path = || paths::link(&name);
        let l = Leaves {
            schema,
            inner: entry,
            path: &path,
        };
        let link = Link {
            lan_port: l.required(ids.link_lan)?,
            wan_port: l.required(ids.link_wan)?,
            description: l.string(ids.link_description),
            name: name.clone(),
        };
        config.links.insert(name, link);
    }
    for (keys, entry) in entries(balancer, ids.unit) {
        let unit = read_unit(schema, ids, &key_name(keys), entry)?;
        config.units.insert(unit.name.clone(), unit);
    }
    let liveness = root.container(ids.liveness).unwrap_or(&empty);
    for (keys, entry) in entries(liveness, ids.profile) {
        let name = key_name(keys);
        let path = || paths::profile(&name);
        let l = Leaves {
            schema,
            inner: entry,
            path: &path,
        };
        let profile = Profile {
            initial_delay_ms: l.required(ids.p_initial_delay)?,
            interval_ms: l.required(ids.p_interval)?,
            round_timeout_ms: l.required(ids.p_round_timeout)?,
            probes_down_count: l.required(ids.p_down)?,
            probes_up_count: l.required(ids.p_up)?,
            active_pairs: l.required(ids.p_active_pairs)?,
            description: l.string(ids.p_description),
            name: name.clone(),
        };
        config.profiles.insert(name, profile);
    }
    Ok(config)
}

fn entries(inner: &Inner, list: SchemaId) -> Box<dyn Iterator<Item = (&Keys, &Inner)> + '_> {
    match inner.get(list) {
        Some(Child::List(l)) => l.iter(),
        _ => Box::new(std::iter::empty()),
    }
}

fn read_port(
    schema: &Schema,
    ids: &ModelIds,
    name: &str,
    entry: &Inner,
) -> Result<Port, ReadError> {
    let path = || paths::port(name);
    let l = Leaves {
        schema,
        inner: entry,
        path: &path,
    };
    Ok(Port {
        name: name.to_string(),
        number: l.required(ids.port_number)?,
        lane: l.parse(ids.port_lane)?,
        speed: l
            .with(ids.port_speed, Speed::parse)?
            .ok_or_else(|| ReadError {
                path: path(),
                message: "no speed".into(),
            })?,
        mtu: l.required(ids.port_mtu)?,
        description: l.string(ids.port_description),
        enabled: l.required(ids.port_enabled)?,
    })
}

fn read_unit(
    schema: &Schema,
    ids: &ModelIds,
    name: &str,
    entry: &Inner,
) -> Result<Unit, ReadError> {
    let path = || paths::unit(name);
    let l = Leaves {
        schema,
        inner: entry,
        path: &path,
    };
    let mut pairs = Vec::new();
    for (keys, pair) in entries(entry, ids.pair) {
        let pair_name = key_name(keys);
        let pair_path = || paths::pair(name, &pair_name);
        let p = Leaves {
            schema,
            inner: pair,
            path: &pair_path,
        };
        pairs.push(Pair {
            lan_port: p.required(ids.pair_lan)?,
            wan_port: p.required(ids.pair_wan)?,
            description: p.string(ids.pair_description),
            name: pair_name.clone(),
        });
    }
    Ok(Unit {
        name: name.to_string(),
        cores: l.required(ids.unit_cores)?,
        cores_set: entry.leaf(ids.unit_cores).is_some(),
        liveness_profile: l.string(ids.unit_profile),
        rebalance: l.required(ids.unit_rebalance)?,
        pairs,
        description: l.string(ids.unit_description),
    })
}

fn read_flow(
    schema: &Schema,
    ids: &ModelIds,
    name: &str,
    entry: &Inner,
) -> Result<Flow, ReadError> {
    let path = || paths::flow(name);
    let l = Leaves {
        schema,
        inner: entry,
        path: &path,
    };
    let empty = Inner::default();
    let m_inner = entry.container(ids.flow_match).unwrap_or(&empty);
    let match_path = || format!("{}/match", paths::flow(name));
    let m = Leaves {
        schema,
        inner: m_inner,
        path: &match_path,
    };
    let mac = |addr: SchemaId, mask: SchemaId| -> Result<Option<MacMatch>, ReadError> {
        let Some(addr) = m.with(addr, MacMatch::parse_mac)? else {
            return Ok(None);
        };
        let mask = m.with(mask, MacMatch::parse_mac)?.unwrap_or([0xff; 6]);
        Ok(Some(MacMatch { addr, mask }))
    };
    let matches = FlowMatch {
        vlan_tags: [
            m.parse(ids.m_vlan[0])?,
            m.parse(ids.m_vlan[1])?,
            m.parse(ids.m_vlan[2])?,
        ],
        vlan_depth: m.parse(ids.m_vlan_depth)?,
        mpls_depth: m.parse(ids.m_mpls_depth)?,
        src_ipv4: m.with(ids.m_src_ipv4, Prefix::parse)?,
        dst_ipv4: m.with(ids.m_dst_ipv4, Prefix::parse)?,
        src_ipv6: m.with(ids.m_src_ipv6, Prefix::parse)?,
        dst_ipv6: m.with(ids.m_dst_ipv6, Prefix::parse)?,
        ip_proto: m.parse(ids.m_ip_proto)?,
        src_port: m.with(ids.m_src_port, PortRange::parse)?,
        dst_port: m.with(ids.m_dst_port, PortRange::parse)?,
        src_mac: mac(ids.m_src_mac, ids.m_src_mac_mask)?,
        dst_mac: mac(ids.m_dst_mac, ids.m_dst_mac_mask)?,
        packet_type: m.parse(ids.m_packet_type)?,
        llc_dsap: m.parse(ids.m_llc_dsap)?,
        llc_ssap: m.parse(ids.m_llc_ssap)?,
        stray_masks: [
            ("src-mac-mask", ids.m_src_mac, ids.m_src_mac_mask),
            ("dst-mac-mask", ids.m_dst_mac, ids.m_dst_mac_mask),
        ]
        .into_iter()
        .filter(|(_, addr, mask)| m_inner.get(*mask).is_some() && m_inner.get(*addr).is_none())
        .map(|(name, _, _)| name)
        .collect(),
    };
    let action_inner = entry.container(ids.flow_action).unwrap_or(&empty);
    let action = if action_inner.get(ids.a_drop).is_some() {
        Action::Drop
    } else if let Some(to) = action_inner.container(ids.a_to_unit) {
        let unit = to
            .leaf(ids.a_unit)
            .map(|v| v.as_str().to_string())
            .unwrap_or_default();
        Action::ToUnit(unit)
    } else {
        // `bypass` set, or nothing set: the choice's default case.
        let _ = ids.a_bypass;
        Action::Bypass
    };
    Ok(Flow {
        name: name.to_string(),
        priority: l.required(ids.flow_priority)?,
        direction: l
            .with(ids.flow_direction, Direction::parse)?
            .unwrap_or_default(),
        links: entry
            .leaf_list(ids.flow_links)
            .map(|items| items.iter().map(|v| v.as_str().to_string()).collect())
            .unwrap_or_default(),
        matches,
        action,
        description: l.string(ids.flow_description),
    })
}

/// Flows by name, as a plain map (for callers that do not care about sharing).
pub fn flows_by_name(config: &Config) -> BTreeMap<&str, &Flow> {
    config
        .flows
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_ref()))
        .collect()
}
