//! Units for the crate's tests.

use efb_model::{Pair, Unit};

/// Unit `name` with pairs p0, p1... on ports NAME-l0 / NAME-w0..., cores set.
pub(crate) fn unit(name: &str, pairs: usize, cores: u16) -> Unit {
    Unit {
        name: name.into(),
        cores,
        cores_set: true,
        liveness_profile: None,
        rebalance: false,
        pairs: (0..pairs)
            .map(|i| Pair {
                name: format!("p{i}"),
                lan_port: format!("{name}-l{i}"),
                wan_port: format!("{name}-w{i}"),
                description: None,
            })
            .collect(),
        description: None,
    }
}
