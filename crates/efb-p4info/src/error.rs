use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum P4InfoError {
    #[error("P4Info text format: {0}")]
    Text(String),
    #[error("P4Info: {0}")]
    Invalid(String),
    #[error("P4Info has no {kind} named {name}")]
    Missing { kind: &'static str, name: String },
}
