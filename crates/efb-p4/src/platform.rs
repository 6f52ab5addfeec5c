//! The switch platform's ports, the Stratum way: P4Runtime has no ports, so their state and
//! counters come over gNMI as OpenConfig interfaces, at the same address as P4Runtime
//! (efb-target serves them as Stratum does). Oper-status is followed by one ON_CHANGE
//! subscription kept open (so a pair's port-down reason costs no round trip); counters are
//! read with Get when asked. When the platform does not answer, they stay unknown.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use efb_openconfig::client::Interfaces;
use efb_openconfig::query::leaf_path;
use efb_openconfig::{Counter, Interface};
use efb_p4info::PortMap;
use futures::StreamExt;
use gnmi_proto::gnmi::g_nmi_client::GNmiClient;
use gnmi_proto::gnmi::{
    Encoding, GetRequest, SetRequest, SubscribeRequest, Subscription, SubscriptionList,
    SubscriptionMode, TypedValue, Update, get_request, subscribe_request, subscribe_response,
    subscription_list, typed_value,
};
use tokio::sync::watch;
use tonic::transport::Channel;

/// Counters of one device port since the chip started.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub device_port: u32,
    pub up: bool,
    pub in_frames: u64,
    pub in_bytes: u64,
    pub out_frames: u64,
    pub out_bytes: u64,
    pub in_discards: u64,
    pub in_errors: u64,
    pub out_discards: u64,
    pub out_errors: u64,
}

/// Which device ports are up, as the platform last said (None: not known now).
pub type PortStates = Option<Arc<BTreeMap<u32, bool>>>;

/// How long to wait before subscribing again after the platform went away.
const RESUBSCRIBE_AFTER: Duration = Duration::from_millis(500);
/// How long a Get or a Set of the platform may take: the driver asks while it holds the
/// chip (a reconcile, a commit), so a platform that hangs must not hold them up.
const ANSWER_WITHIN: Duration = Duration::from_secs(2);

/// The platform's gNMI, over one kept connection.
#[derive(Clone)]
pub struct Platform {
    /// None when the address is not a URI (then nothing is served).
    client: Option<GNmiClient<Channel>>,
    ports: Arc<PortMap>,
    states: Arc<watch::Sender<PortStates>>,
}

impl Platform {
    /// The platform at `address` (host:port or a URI); connected at the first question and
    /// again whenever the connection is lost. Starts following oper-status; needs a tokio
    /// runtime.
    pub fn start(address: &str, ports: PortMap) -> Platform {
        let uri = if address.contains("://") {
            address.to_string()
        } else {
            format!("http://{address}")
        };
        let client = Channel::from_shared(uri)
            .ok()
            .map(|endpoint| GNmiClient::new(endpoint.tcp_nodelay(true).connect_lazy()));
        let platform = Platform {
            client,
            ports: Arc::new(ports),
            states: Arc::new(watch::Sender::new(None)),
        };
        if let Some(client) = platform.client.clone() {
            let follower = Follower {
                client,
                ports: platform.ports.clone(),
                states: Arc::downgrade(&platform.states),
            };
            tokio::spawn(follower.run());
        }
        platform
    }

    /// Which device ports are up now, without asking (the subscription keeps it).
    pub fn port_states(&self) -> PortStates {
        self.states.borrow().clone()
    }

    /// Port states from now on, marked changed at every change.
    pub fn watch_port_states(&self) -> watch::Receiver<PortStates> {
        self.states.subscribe()
    }

    /// Every interface of the platform by device port, as Get reads it now, or `None`
    /// when the platform does not answer.
    pub async fn interfaces(&self) -> Option<BTreeMap<u32, Interface>> {
        let mut client = self.client.clone()?;
        let request = GetRequest {
            path: vec![leaf_path("", "*", &["state"])],
            r#type: get_request::DataType::State as i32,
            encoding: Encoding::Proto as i32,
            ..GetRequest::default()
        };
        let reply = tokio::time::timeout(ANSWER_WITHIN, client.get(request))
            .await
            .ok()?
            .ok()?
            .into_inner();
        let mut read = Interfaces::default();
        for notification in &reply.notification {
            read.apply(notification);
        }
        Some(
            read.0
                .into_values()
                .filter_map(|i| Some((self.ports.resolve(&i.name).ok()?, i)))
                .collect(),
        )
    }

    /// The counters of every port, or `None` when the platform does not serve them.
    pub async fn port_counters(&self) -> Option<Vec<PortCounters>> {
        let interfaces = self.interfaces().await?;
        Some(
            interfaces
                .iter()
                .map(|(port, i)| counters_of(*port, i))
                .collect(),
        )
    }

    /// Sets the admin-status of device ports (`config/enabled`), all or none.
    pub async fn set_enabled(&self, ports: &[(u32, bool)]) -> Result<(), tonic::Status> {
        let Some(mut client) = self.client.clone() else {
            return Err(tonic::Status::unavailable("no platform address"));
        };
        let mut update = Vec::new();
        for (port, enabled) in ports {
            let Some(name) = self.ports.name_of(*port) else {
                continue;
            };
            let path = leaf_path("", &name.to_string(), &["config", "enabled"]);
            update.push(Update {
                path: Some(path),
                val: Some(TypedValue {
                    value: Some(typed_value::Value::BoolVal(*enabled)),
                }),
                ..Update::default()
            });
        }
        if update.is_empty() {
            return Ok(());
        }
        let set = client.set(SetRequest {
            update,
            ..SetRequest::default()
        });
        match tokio::time::timeout(ANSWER_WITHIN, set).await {
            Ok(answer) => answer.map(|_| ()),
            Err(_) => Err(tonic::Status::deadline_exceeded(format!(
                "the platform did not answer within {ANSWER_WITHIN:?}"
            ))),
        }
    }
}

fn counters_of(device_port: u32, interface: &Interface) -> PortCounters {
    let c = &interface.counters;
    PortCounters {
        device_port,
        up: interface.oper_up,
        in_frames: c.get(Counter::InPkts),
        in_bytes: c.get(Counter::InOctets),
        out_frames: c.get(Counter::OutPkts),
        out_bytes: c.get(Counter::OutOctets),
        in_discards: c.get(Counter::InDiscards),
        in_errors: c.get(Counter::InErrors),
        out_discards: c.get(Counter::OutDiscards),
        out_errors: c.get(Counter::OutErrors),
    }
}

/// Follows the platform's oper-status for the [`Platform`]s that share `states`, until
/// they are all gone.
struct Follower {
    client: GNmiClient<Channel>,
    ports: Arc<PortMap>,
    states: Weak<watch::Sender<PortStates>>,
}

impl Follower {
    /// Keeps an ON_CHANGE subscription to every interface's oper-status, again after each
    /// loss, and publishes the states it tells.
    async fn run(mut self) {
        loop {
            let told = self.subscribe_once().await;
            let Some(states) = self.states.upgrade() else {
                return;
            };
            states.send_replace(None);
            if let Err(status) = told {
                tracing::debug!(%status, "platform's oper-status subscription ended");
            }
            drop(states);
            tokio::time::sleep(RESUBSCRIBE_AFTER).await;
        }
    }

    async fn subscribe_once(&mut self) -> Result<(), tonic::Status> {
        let request = SubscribeRequest {
            request: Some(subscribe_request::Request::Subscribe(SubscriptionList {
                subscription: vec![Subscription {
                    path: Some(leaf_path("", "*", &["state", "oper-status"])),
                    mode: SubscriptionMode::OnChange as i32,
                    ..Subscription::default()
                }],
                mode: subscription_list::Mode::Stream as i32,
                encoding: Encoding::Proto as i32,
                ..SubscriptionList::default()
            })),
            ..SubscribeRequest::default()
        };
        let mut responses = self
            .client
            .subscribe(futures::stream::iter([request]).chain(futures::stream::pending()))
            .await?
            .into_inner();
        let mut told = Interfaces::default();
        let mut synced = false;
        while let Some(response) = responses.next().await {
            match response?.response {
                Some(subscribe_response::Response::Update(notification)) => {
                    told.apply(&notification);
                }
                Some(subscribe_response::Response::SyncResponse(_)) => synced = true,
                _ => continue,
            }
            if synced && !self.publish(&told) {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Publishes the states told; false when no one is left to hear them.
    fn publish(&self, told: &Interfaces) -> bool {
        let Some(states) = self.states.upgrade() else {
            return false;
        };
        let told: BTreeMap<u32, bool> = told
            .0
            .values()
            .filter_map(|i| Some((self.ports.resolve(&i.name).ok()?, i.oper_up)))
            .collect();
        states.send_replace(Some(Arc::new(told)));
        true
    }
}

/// The device ports a configuration takes admin-down: its ports with `enabled false`
/// (every other port of the board stays enabled, as the chip starts them).
pub fn disabled_ports(
    ports: &PortMap,
    config: &efb_model::Config,
) -> std::collections::BTreeSet<u32> {
    config
        .ports
        .values()
        .filter(|p| !p.enabled)
        .filter_map(|p| {
            ports
                .device_port(efb_p4info::PortName {
                    port: u32::from(p.number),
                    lane: p.lane.map(u32::from),
                })
                .ok()
        })
        .collect()
}

/// The admin-status changes that take the chip from `chip` (device port -> enabled, as
/// read) to `disabled` (every other port enabled).
pub fn admin_changes(
    chip: &BTreeMap<u32, bool>,
    disabled: &std::collections::BTreeSet<u32>,
) -> Vec<(u32, bool)> {
    chip.iter()
        .filter_map(|(port, enabled)| {
            let wanted = !disabled.contains(port);
            (*enabled != wanted).then_some((*port, wanted))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ports_whose_admin_status_differs_are_set() {
        let chip: BTreeMap<u32, bool> = [(1, true), (2, false), (3, true), (4, false)].into();
        let disabled = [2, 3].into();
        assert_eq!(admin_changes(&chip, &disabled), [(3, false), (4, true)]);
    }
}
