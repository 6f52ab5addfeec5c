//! Everything a commit checks: libyang (every YANG rule), then the rules of MODEL.md on the
//! typed configuration. A change to a valid configuration is checked in proportion to the
//! change where the schema allows it.

use std::sync::Arc;

use efb_yang::diff;
use efb_yang::json;
use efb_yang::validate::{self, Affected, Entries, Scope};
use efb_yang::{DataTree, Problem, Schema};

use crate::read::{self, ModelIds, ReadError};
use crate::rules::{self, FlowScope};
use crate::types::Config;

/// What validation found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub errors: Vec<Problem>,
    pub warnings: Vec<Problem>,
    /// How much libyang looked at.
    pub scope: Scope,
}

impl Report {
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// A report, and the typed configuration when the data could be read as one (shared: a
/// load's verdict kept for its commit costs no copy of 100 000 flows).
#[derive(Clone, Debug)]
pub struct Validated {
    pub report: Report,
    pub config: Option<Arc<Config>>,
}

/// Validates configurations of one schema.
pub struct Validator {
    schema: Arc<Schema>,
    ids: ModelIds,
}

impl Validator {
    pub fn new(schema: Arc<Schema>) -> Result<Validator, ReadError> {
        let ids = ModelIds::new(&schema)?;
        Ok(Validator { schema, ids })
    }

    pub fn schema(&self) -> &Arc<Schema> {
        &self.schema
    }

    pub fn ids(&self) -> &ModelIds {
        &self.ids
    }

    /// The typed view of a tree.
    pub fn read(&self, tree: &DataTree) -> Result<Config, ReadError> {
        read::read_config(&self.schema, &self.ids, tree)
    }

    /// Validates a whole configuration. `libyang_checked`: the tree is known to pass libyang
    /// already (it was just parsed with complete checks), so only the rules run.
    pub fn validate(&self, tree: &DataTree, libyang_checked: bool) -> Validated {
        let errors = if libyang_checked {
            Vec::new()
        } else {
            validate::validate(&self.schema, tree)
                .err()
                .unwrap_or_default()
        };
        conclude(errors, self.read(tree), Scope::Full, FlowScope::All)
    }

    /// Reads and validates a whole configuration given as RFC 7951 JSON: libyang and the
    /// rules run side by side (see [`json::from_json_validating`]); when libyang finds the
    /// data incomplete (a reference or a mandatory leaf missing), the rules' findings still
    /// come with its own, so that one answer names every problem. A type error (an unknown
    /// node, a wrong value) is an `Err`: there is no tree to speak of.
    pub fn validate_json(&self, text: &str) -> Result<(DataTree, Validated), efb_yang::Error> {
        let (tree, libyang, rules_only) = json::from_json_validating(&self.schema, text, |tree| {
            conclude(Vec::new(), self.read(tree), Scope::Full, FlowScope::All)
        })?;
        Ok((
            tree,
            with_libyang(rules_only, libyang.err().unwrap_or_default()),
        ))
    }

    /// Validates `candidate`, a change of the valid configuration `base` (read from
    /// `base_tree`), in proportion to the change: libyang as [`validate::validate_change`]
    /// says; our rules on everything but the flows, and on the flows the change touched or
    /// that name a changed link or unit (the only way a rule on a flow looks outside it).
    pub fn validate_change(
        &self,
        base_tree: &DataTree,
        base: &Config,
        candidate: &DataTree,
    ) -> Validated {
        let changed = diff::changed_records(&self.schema, base_tree, candidate);
        let affected = Affected::of(&self.schema, candidate, &changed);
        let (errors, scope) = match validate::validate_affected(&self.schema, candidate, &affected)
        {
            Ok(scope) => (Vec::new(), scope),
            Err(problems) => (problems, Scope::Full),
        };
        let read = read::update_config(&self.schema, &self.ids, base, candidate, &changed);
        let checked = self.flow_names(&affected.with_referrers(false));
        let written = self.flow_names(&affected.touched);
        let flows = match scope {
            Scope::Entries(_) => FlowScope::Only {
                checked: &checked,
                written: &written,
            },
            Scope::Full => FlowScope::All,
        };
        conclude(errors, read, scope, flows)
    }

    /// Names of the flows among `entries`.
    fn flow_names(&self, entries: &Entries) -> Vec<String> {
        entries
            .get(&self.ids.flow_list())
            .into_iter()
            .flatten()
            .filter_map(|keys| keys.first().map(|k| k.as_str().to_string()))
            .collect()
    }
}

/// libyang's errors, then the rules on the typed configuration when the tree could be read
/// as one (when it could not, libyang's own message, a missing mandatory leaf say, is the
/// one to show).
fn conclude(
    mut errors: Vec<Problem>,
    read: Result<Config, ReadError>,
    scope: Scope,
    flows: FlowScope<'_>,
) -> Validated {
    let config = match read {
        Ok(config) => Some(Arc::new(config)),
        Err(e) => {
            if errors.is_empty() {
                errors.push(Problem::new(e.path, e.message));
            }
            None
        }
    };
    let mut warnings = Vec::new();
    if let Some(config) = &config {
        let findings = rules::check(config, flows);
        errors.extend(findings.errors);
        warnings = findings.warnings;
    }
    Validated {
        report: Report {
            errors,
            warnings,
            scope,
        },
        config,
    }
}

/// Puts libyang's problems before what the rules found, as [`conclude`] orders them; when
/// the tree could not be read, libyang's message replaces the reader's.
fn with_libyang(mut validated: Validated, libyang: Vec<Problem>) -> Validated {
    if libyang.is_empty() {
        return validated;
    }
    let rules = std::mem::take(&mut validated.report.errors);
    validated.report.errors = libyang;
    if validated.config.is_some() {
        validated.report.errors.extend(rules);
    }
    validated
}
