//! Primary election per role (P4Runtime "Client Arbitration"): the controller whose
//! election id equals the highest one ever seen for its role is the primary. The highest
//! id is remembered after its controller leaves, until the target restarts, so a
//! controller coming back with a lower id stays backup (as on real targets).

use std::collections::HashMap;

use p4runtime_proto::google::rpc::Status as RpcStatus;
use p4runtime_proto::p4::v1::{
    MasterArbitrationUpdate, Role, StreamMessageResponse, Uint128, stream_message_response,
};
use tokio::sync::mpsc;
use tonic::Code;

use crate::error::TargetError;

pub type StreamTx = mpsc::Sender<Result<StreamMessageResponse, tonic::Status>>;

struct Controller {
    election_id: Option<u128>,
    tx: StreamTx,
}

#[derive(Default)]
struct RoleState {
    highest: Option<u128>,
    controllers: HashMap<u64, Controller>,
    /// Which stream each controller is (its role is fixed at its first update).
    primary: Option<u64>,
}

#[derive(Default)]
pub struct Arbitration {
    device_id: u64,
    roles: HashMap<String, RoleState>,
    stream_roles: HashMap<u64, String>,
}

impl Arbitration {
    pub fn new(device_id: u64) -> Arbitration {
        Arbitration {
            device_id,
            ..Arbitration::default()
        }
    }
}

pub fn to_u128(id: &Uint128) -> u128 {
    (u128::from(id.high) << 64) | u128::from(id.low)
}

fn from_u128(id: u128) -> Uint128 {
    Uint128 {
        high: (id >> 64) as u64,
        low: id as u64,
    }
}

impl Arbitration {
    /// Handles a MasterArbitrationUpdate from stream `stream`. An error ends the stream.
    pub fn update(
        &mut self,
        stream: u64,
        update: &MasterArbitrationUpdate,
        tx: &StreamTx,
    ) -> Result<(), TargetError> {
        if update.role.as_ref().is_some_and(|r| r.config.is_some()) {
            return Err(TargetError::invalid(
                "role configurations are not supported: leave role.config unset",
            ));
        }
        let role = update
            .role
            .as_ref()
            .map(|r| r.name.clone())
            .unwrap_or_default();
        let election_id = update.election_id.as_ref().map(to_u128);
        if let Some(current) = self.stream_roles.get(&stream)
            && *current != role
        {
            return Err(TargetError::precondition(format!(
                "this stream is for role {current:?}: open a new stream to change role"
            )));
        }
        let state = self.roles.entry(role.clone()).or_default();
        if let Some(id) = election_id
            && state
                .controllers
                .iter()
                .any(|(s, c)| *s != stream && c.election_id == Some(id))
        {
            return Err(TargetError::invalid(format!(
                "election id {id} is used by another controller"
            )));
        }
        let was_primary = state.primary == Some(stream);
        state.controllers.insert(
            stream,
            Controller {
                election_id,
                tx: tx.clone(),
            },
        );
        self.stream_roles.insert(stream, role.clone());
        self.elect(&role, stream, election_id, was_primary);
        Ok(())
    }

    fn elect(&mut self, role: &str, stream: u64, election_id: Option<u128>, was_primary: bool) {
        let Some(state) = self.roles.get_mut(role) else {
            return;
        };
        let becomes_primary = match (election_id, state.highest) {
            (Some(id), Some(highest)) => id >= highest,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if becomes_primary {
            state.highest = election_id;
            state.primary = Some(stream);
            notify_all(self.device_id, role, state);
        } else if was_primary {
            state.primary = None;
            notify_all(self.device_id, role, state);
        } else {
            notify_one(self.device_id, role, state, stream);
        }
    }

    /// A stream ended: its controller leaves; if it was primary, the others learn there
    /// is none now.
    pub fn remove(&mut self, stream: u64) {
        let Some(role) = self.stream_roles.remove(&stream) else {
            return;
        };
        let Some(state) = self.roles.get_mut(&role) else {
            return;
        };
        state.controllers.remove(&stream);
        if state.primary == Some(stream) {
            state.primary = None;
            notify_all(self.device_id, &role, state);
        }
    }

    /// Whether `election_id` is the primary's for `role` (Write and
    /// SetForwardingPipelineConfig need it).
    pub fn check_primary(
        &self,
        role: &str,
        election_id: Option<&Uint128>,
    ) -> Result<(), TargetError> {
        let state = self.roles.get(role).ok_or_else(|| {
            TargetError::not_found(format!("no controller has arbitrated for role {role:?}"))
        })?;
        let primary = state
            .primary
            .and_then(|s| state.controllers.get(&s))
            .and_then(|c| c.election_id);
        match (primary, election_id.map(to_u128)) {
            (Some(p), Some(id)) if p == id => Ok(()),
            (None, _) => Err(TargetError::permission(format!(
                "role {role:?} has no primary controller"
            ))),
            _ => Err(TargetError::permission(
                "the election id is not the primary's",
            )),
        }
    }

    /// Whether stream `stream` is the primary of its role.
    pub fn is_primary_stream(&self, stream: u64) -> bool {
        self.stream_roles
            .get(&stream)
            .and_then(|r| self.roles.get(r))
            .is_some_and(|s| s.primary == Some(stream))
    }

    /// Streams of the primaries (packet-ins go there).
    pub fn primaries(&self) -> Vec<StreamTx> {
        self.roles
            .values()
            .filter_map(|s| s.primary.and_then(|p| s.controllers.get(&p)))
            .map(|c| c.tx.clone())
            .collect()
    }

    /// Ends every stream with `status` and forgets everything, election ids included.
    pub fn reset(&mut self, status: &tonic::Status) {
        for state in self.roles.values() {
            for c in state.controllers.values() {
                let _ignored_if_gone = c.tx.try_send(Err(status.clone()));
            }
        }
        self.roles.clear();
        self.stream_roles.clear();
    }
}

fn message(device_id: u64, role: &str, state: &RoleState, to: u64) -> StreamMessageResponse {
    let status = match state.primary {
        Some(p) if p == to => RpcStatus {
            code: Code::Ok as i32,
            message: "primary".into(),
            details: vec![],
        },
        Some(_) => RpcStatus {
            code: Code::AlreadyExists as i32,
            message: "a primary is elected".into(),
            details: vec![],
        },
        None => RpcStatus {
            code: Code::NotFound as i32,
            message: "no primary is elected".into(),
            details: vec![],
        },
    };
    let update = MasterArbitrationUpdate {
        device_id,
        role: (!role.is_empty()).then(|| Role {
            name: role.to_string(),
            ..Default::default()
        }),
        election_id: state.highest.map(from_u128),
        status: Some(status),
    };
    StreamMessageResponse {
        update: Some(stream_message_response::Update::Arbitration(update)),
    }
}

fn notify_all(device_id: u64, role: &str, state: &RoleState) {
    for (stream, c) in &state.controllers {
        send(&c.tx, message(device_id, role, state, *stream));
    }
}

fn notify_one(device_id: u64, role: &str, state: &RoleState, stream: u64) {
    if let Some(c) = state.controllers.get(&stream) {
        send(&c.tx, message(device_id, role, state, stream));
    }
}

fn send(tx: &StreamTx, msg: StreamMessageResponse) {
    if tx.try_send(Ok(msg)).is_err() {
        tracing::warn!("a controller's stream is full or gone: arbitration notice dropped");
    }
}
