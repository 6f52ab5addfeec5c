//! What efbd tells and keeps: the [`audit`] of changes and refusals, the [`events`]
//! operators watch for (commits, liveness, the chip, links; kept for `show log`), and where
//! the log goes and in what form ([`logging`]).

pub mod audit;
pub mod events;
pub mod logging;
