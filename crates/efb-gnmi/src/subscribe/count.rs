//! Subscribe RPCs counted in all and per user, so that a maximum refuses one more at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tonic::Status;
use tracing::warn;

use efb_northbound::listen;

/// Subscribe RPCs under way, in all and per user, within their maximums.
pub(super) struct Count {
    max: usize,
    per_user: usize,
    /// In all, and per user.
    open: Mutex<(usize, HashMap<String, usize>)>,
    /// The total again, where metrics read it without the lock.
    shown: listen::Open,
}

impl Count {
    pub(super) fn new(max: usize, per_user: usize, shown: listen::Open) -> Count {
        Count {
            max,
            per_user,
            open: Mutex::new((0, HashMap::new())),
            shown,
        }
    }

    /// A place for one more subscription of `user`, held until the slot is dropped.
    pub(super) fn admit(self: &Arc<Self>, user: &str) -> Result<Slot, Status> {
        let mut open = self
            .open
            .lock()
            .map_err(|_| Status::internal("subscription count unavailable"))?;
        let (total, users) = &mut *open;
        let mine = users.get(user).copied().unwrap_or(0);
        let refusal = if mine >= self.per_user {
            format!(
                "user {user} has {mine} subscriptions open, the most one user may have \
                 (gnmi.max_subscriptions_per_user = {}): close one first",
                self.per_user
            )
        } else if *total >= self.max {
            format!(
                "efbd serves {total} subscriptions, the most it serves at once \
                 (gnmi.max_subscriptions = {}): retry later",
                self.max
            )
        } else {
            *total += 1;
            users.insert(user.to_string(), mine + 1);
            return Ok(Slot {
                count: self.clone(),
                user: user.to_string(),
                _shown: self.shown.enter(),
            });
        };
        warn!(
            user,
            total = *total,
            of_user = mine,
            "subscription refused: {refusal}"
        );
        Err(Status::resource_exhausted(refusal))
    }
}

/// One subscription's place in the [`Count`].
pub(super) struct Slot {
    count: Arc<Count>,
    user: String,
    _shown: listen::OpenGuard,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let Ok(mut open) = self.count.open.lock() else {
            return;
        };
        let (total, users) = &mut *open;
        *total = total.saturating_sub(1);
        if let Some(mine) = users.get_mut(&self.user) {
            *mine = mine.saturating_sub(1);
            if *mine == 0 {
                users.remove(&self.user);
            }
        }
    }
}
