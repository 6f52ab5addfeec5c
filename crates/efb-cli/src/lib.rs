//! The EcoFilter Balancer shell. Operational words come from `cli-grammar/` ([`grammar`]),
//! configuration words from the YANG schema the daemon serves; Tab and `?` from
//! [`complete`]; answers drawn by [`view`]; every command runs in [`shell`] against efbd
//! through [`client`]. The words of configuration mode are one list, [`config_commands`].

pub mod client;
pub mod commit_report;
pub mod complete;
pub mod config_commands;
pub mod grammar;
pub mod help;
pub mod interactive;
pub mod pager;
pub mod protocol;
pub mod shell;
pub mod view;
