//! The errors of this crate: invalid data (its problems) or a schema that did not load.

use crate::Problem;
use crate::text;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The data (or the module) is not valid; each problem names its path.
    #[error("{}", list_problems(.0))]
    Invalid(Vec<Problem>),
    /// The schema could not be loaded or indexed.
    #[error("YANG schema: {0}")]
    Schema(String),
}

impl Error {
    /// The problems of an `Invalid` error; a schema error as one problem.
    pub fn problems(&self) -> Vec<Problem> {
        match self {
            Error::Invalid(problems) => problems.clone(),
            Error::Schema(message) => vec![Problem::new("", message.clone())],
        }
    }
}

fn list_problems(problems: &[Problem]) -> String {
    text::problem_lines(problems, "")
}
