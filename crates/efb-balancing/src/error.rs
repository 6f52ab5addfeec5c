use std::net::IpAddr;

use thiserror::Error;

#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum BalancingError {
    /// A session cannot mix families: the key orders the two addresses as byte strings of
    /// one length, and no frame carries an IPv4 source with an IPv6 destination.
    #[error("source {src} and destination {dst} are not of the same address family")]
    MixedFamilies { src: IpAddr, dst: IpAddr },
    /// Validation refuses this, so meeting it means the configuration was not validated.
    #[error("flow {flow} sends to ecofilter unit {unit}, which is not configured")]
    UnknownUnit { flow: String, unit: String },
    /// Validation refuses this, so meeting it means the configuration was not validated.
    #[error("ecofilter unit {unit} uses liveness profile {profile}, which is not configured")]
    UnknownProfile { unit: String, profile: String },
    /// A session said to come in on a link the configuration does not have.
    #[error("link {link}: no such link; links are: {}", known.join(", "))]
    UnknownLink { link: String, known: Vec<String> },
}
