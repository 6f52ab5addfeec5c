//! The packet replication engine's multicast groups, as Stratum on Tofino keeps them: a
//! group id of 16 bits (`ig_tm_md.mcast_grp_a`; 0 means no group), replicas named by
//! device port and instance, the instance becoming the copy's 16-bit replication id
//! (`eg_intr_md.egress_rid`). Checked here, kept in [`crate::tables::Objects`].

use std::collections::HashSet;

use efb_p4info::PortMap;
use p4runtime_proto::p4::v1::{self as p4, replica::PortKind};

use crate::error::TargetError;
use crate::profile::Profile;

/// Tofino's multicast group ids are 16 bits, 0 being "no group".
pub const MAX_GROUP_ID: u32 = 0xFFFF;
/// The replication id is 16 bits.
pub const MAX_INSTANCE: u16 = u16::MAX;
/// Replicas of one group at most: this target's choice, twice the 512 (pair, direction)
/// cells of the keep-alive registers, far more than one unit's pair ports.
pub const MAX_REPLICAS: usize = 1024;

/// One copy: out of `port`, with replication id `rid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Replica {
    pub port: u32,
    pub rid: u16,
}

/// A group as written (canonical, for reads) and as the traffic manager uses it.
#[derive(Clone, Debug, PartialEq)]
pub struct MulticastGroup {
    pub entry: p4::MulticastGroupEntry,
    pub replicas: Vec<Replica>,
}

/// Checks a group id for any update.
pub fn check_group_id(id: u32) -> Result<(), TargetError> {
    if id == 0 {
        return Err(TargetError::invalid(
            "multicast_group_id 0 is not a group (a packet-out's mcast_grp 0 means unicast): use 1..65535",
        ));
    }
    if id > MAX_GROUP_ID {
        return Err(TargetError::invalid(format!(
            "multicast_group_id {id} does not fit Tofino's 16-bit group ids: use 1..{MAX_GROUP_ID}"
        )));
    }
    Ok(())
}

/// Checks a group for INSERT or MODIFY against the chip's ports, and returns it as it is
/// kept. Stratum reads replicas back sorted by instance then port: so does the
/// stratum-tofino profile; the spec profile keeps the written order.
pub fn check_group(
    g: &p4::MulticastGroupEntry,
    ports: &PortMap,
    profile: Profile,
) -> Result<MulticastGroup, TargetError> {
    check_group_id(g.multicast_group_id)?;
    if g.replicas.len() > MAX_REPLICAS {
        return Err(TargetError::new(
            tonic::Code::ResourceExhausted,
            format!(
                "multicast group {} has {} replicas: at most {MAX_REPLICAS} per group",
                g.multicast_group_id,
                g.replicas.len()
            ),
        ));
    }
    let mut replicas = Vec::with_capacity(g.replicas.len());
    let mut seen = HashSet::new();
    for (i, r) in g.replicas.iter().enumerate() {
        let what = format!("multicast group {} replica {i}", g.multicast_group_id);
        let replica = check_replica(r, ports).map_err(|e| e.context(&what))?;
        if !seen.insert(replica) {
            return Err(TargetError::invalid(format!(
                "{what}: (egress_port {}, instance {}) is there already: each (port, instance) once per group",
                replica.port, replica.rid
            )));
        }
        replicas.push(replica);
    }
    if profile.is_stratum() {
        replicas.sort_by_key(|r| (r.rid, r.port));
    }
    let entry = p4::MulticastGroupEntry {
        multicast_group_id: g.multicast_group_id,
        replicas: replicas.iter().map(|r| replica_entry(*r)).collect(),
    };
    Ok(MulticastGroup { entry, replicas })
}

fn check_replica(r: &p4::Replica, ports: &PortMap) -> Result<Replica, TargetError> {
    #[allow(deprecated)]
    let port = match &r.port_kind {
        Some(PortKind::EgressPort(port)) => *port,
        Some(PortKind::Port(_)) => {
            return Err(TargetError::invalid(
                "port (bytes) needs port translation, which is not enabled on this target (as Stratum without SDN ports): name the device port in egress_port",
            ));
        }
        None => {
            return Err(TargetError::invalid(
                "the replica names no port: set egress_port (a device port)",
            ));
        }
    };
    if ports.name_of(port).is_none() {
        return Err(TargetError::invalid(format!(
            "egress_port {port} is not a front-panel port of this chip ({}; as device ports: {})",
            ports.summary(),
            device_port_ranges(ports)
        )));
    }
    let rid = u16::try_from(r.instance).map_err(|_| {
        TargetError::invalid(format!(
            "instance {} does not fit Tofino's 16-bit replication id: use 0..{MAX_INSTANCE}",
            r.instance
        ))
    })?;
    Ok(Replica { port, rid })
}

fn replica_entry(r: Replica) -> p4::Replica {
    #[allow(deprecated)]
    p4::Replica {
        port_kind: Some(PortKind::EgressPort(r.port)),
        instance: u32::from(r.rid),
    }
}

/// The chip's device ports as ranges (`0..3, 8..11`), for a message about one it lacks.
fn device_port_ranges(ports: &PortMap) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for p in ports.device_ports() {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == p => *end = p,
            _ => ranges.push((p, p)),
        }
    }
    ranges
        .iter()
        .map(|(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}..{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
