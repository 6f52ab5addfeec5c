//! What efbd needs of its process and machine: the datastore directory it owns
//! ([`state_dir`]), the open-file limit its connections need ([`open_files`]), memory
//! given back to the system ([`memory`]) and systemd's readiness protocol ([`notify`]).

pub mod memory;
pub mod notify;
pub mod open_files;
pub mod state_dir;
