//! The open-file limit. Every connection holds a file descriptor, and so do the datastore,
//! the audit logs and the chip's connection: at the soft limit a listener's accept fails
//! ("Too many open files") and admins are refused with everyone else. efbd raises its
//! soft limit to the hard one at start and warns when its listeners' maxima do not fit.

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use tracing::{info, warn};

/// Descriptors kept beside the listeners' connections: sled's files, the audit logs,
/// the chip's and the log's connections, a loaded file, with room to spare.
pub const KEPT_FOR_FILES: u64 = 128;

/// What the open-file limit is after raising, and whether it fits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenFiles {
    pub soft: u64,
    pub hard: u64,
    /// The listeners' worst case plus [`KEPT_FOR_FILES`].
    pub needed: u64,
}

impl OpenFiles {
    pub fn fits(&self) -> bool {
        self.needed <= self.soft
    }
}

/// Raises the soft limit to the hard one (a failure, as under the unit's
/// `SystemCallFilter=~@resources`, keeps the soft limit: the unit sets `LimitNOFILE`),
/// logs the outcome and warns when `listeners` (name, descriptors at worst) do not fit.
pub fn raise(listeners: &[(&str, usize)]) -> Option<OpenFiles> {
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(limits) => limits,
        Err(e) => {
            warn!(error = %e, "cannot read the open-file limit");
            return None;
        }
    };
    let soft = if soft < hard {
        match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(e) => {
                warn!(soft, hard, error = %e, "cannot raise the open-file limit to its hard limit");
                soft
            }
        }
    } else {
        soft
    };
    let connections: u64 = listeners.iter().map(|(_, n)| *n as u64).sum();
    let open = OpenFiles {
        soft,
        hard,
        needed: connections + KEPT_FOR_FILES,
    };
    if open.fits() {
        info!(limit = soft, needed = open.needed, "open-file limit");
    } else {
        let each = listeners
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", ");
        warn!(
            limit = soft,
            needed = open.needed,
            "the open-file limit ({soft}) is below what the connection limits may hold ({each}) and {KEPT_FOR_FILES} for files: \
             past it, new connections, admins' too, fail with 'Too many open files'; raise LimitNOFILE \
             (systemctl edit efbd) or ulimit -n, or lower the connection maxima"
        );
    }
    Some(open)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_one() {
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit");
        let lowered = (hard / 2).max(64);
        setrlimit(Resource::RLIMIT_NOFILE, lowered, hard).expect("lower the soft limit");
        let open = raise(&[("gNMI", 10)]).expect("limits read");
        assert_eq!(open.soft, hard);
        assert_eq!(
            getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit").0,
            hard
        );
        assert_eq!(open.needed, 10 + KEPT_FOR_FILES);
    }

    #[test]
    fn listeners_that_do_not_fit_are_found() {
        let open = raise(&[("gNMI", usize::MAX / 4)]).expect("limits read");
        assert!(!open.fits());
    }
}
