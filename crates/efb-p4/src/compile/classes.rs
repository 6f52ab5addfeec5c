//! The `frame_classes` table of a compiled configuration, kept up to date flow by flow:
//! each flow's atoms (its link scope, Ethernet-layer criteria, need of an L4 header) and
//! how many flows use each atom, so that a commit that changes one flow of 8 192 looks at
//! one flow, and classifies again only when the set of atoms changed.

use std::collections::BTreeSet;
use std::sync::Arc;

use efb_model::{Flow, paths};
use efb_p4info::names::{FieldName, actions as a, fields as f, tables as t};

use super::{CompileError, Desired};
use crate::entry::{Builder, Criterion, chip_priority};
use crate::frame_classes::{self, Atom, ClassMatch, FrameClasses, Layout};

/// Every flow's atoms and the class table they make.
#[derive(Clone, Debug, Default)]
pub(super) struct FlowClasses {
    /// Each flow's atoms; `None`: no frame can match the flow.
    per_flow: imbl::OrdMap<String, Option<Arc<Vec<Atom>>>>,
    /// How many flows use each atom.
    uses: imbl::OrdMap<Atom, usize>,
    /// The table as last classified (with the layout it used).
    pub table: Arc<FrameClasses>,
    /// An atom came or went since the table was classified.
    stale: bool,
}

impl FlowClasses {
    /// Starts again from no flows, keeping the table (and so its layout) to compare with.
    pub fn emptied(&self) -> FlowClasses {
        FlowClasses {
            table: self.table.clone(),
            stale: true,
            ..FlowClasses::default()
        }
    }

    /// Records `flow`'s atoms, `link_ids` being the ids of the links it names.
    pub fn set(&mut self, flow: &Flow, link_ids: &[u32]) {
        self.remove(&flow.name);
        let atoms = frame_classes::flow_atoms(&flow.matches, link_ids).map(Arc::new);
        for atom in atoms.iter().flat_map(|a| a.iter()) {
            let count = self.uses.entry(atom.clone()).or_insert(0);
            self.stale |= *count == 0;
            *count += 1;
        }
        self.per_flow.insert(flow.name.clone(), atoms);
    }

    pub fn remove(&mut self, flow: &str) {
        let Some(Some(atoms)) = self.per_flow.remove(flow) else {
            return;
        };
        for atom in atoms.iter() {
            if let Some(count) = self.uses.get_mut(atom) {
                *count -= 1;
                if *count == 0 {
                    self.uses.remove(atom);
                    self.stale = true;
                }
            }
        }
    }

    /// Classifies again when the atoms changed, keeping `previous`'s layout where the bits
    /// allow. `true` when the layout was made afresh: every flow's class match may differ.
    pub fn classify(&mut self, previous: &Layout, table_size: usize) -> Result<bool, CompileError> {
        if !self.stale {
            return Ok(false);
        }
        let atoms: BTreeSet<Atom> = self.uses.keys().cloned().collect();
        let table = frame_classes::classify(&atoms, previous, table_size)?;
        let relaid = table.relaid;
        self.table = Arc::new(table);
        self.stale = false;
        Ok(relaid)
    }

    /// What `flow` matches on the class (mask 0: any class); `None` when no frame can
    /// match the flow.
    pub fn class_match(&self, flow: &str) -> Option<ClassMatch> {
        let atoms = self.per_flow.get(flow)?.as_ref()?;
        self.table.layout.class_match(atoms)
    }
}

/// The table's entries: `set_frame_class` for each combination of atoms a frame can meet.
/// They come from every flow at once, so they name the flows as their source.
pub(super) fn entries(b: &Builder, classes: &FrameClasses) -> Result<Vec<Desired>, CompileError> {
    let source = paths::flows();
    classes
        .entries
        .iter()
        .map(|e| {
            let criteria: Vec<(FieldName, Criterion)> = e
                .cube
                .criteria()
                .map(|(field, value, mask)| (field, Criterion::Ternary(value, mask)))
                .collect();
            let priority = chip_priority(e.priority);
            let params = [(f::FRAME_CLASS, u128::from(e.class))];
            Ok(Desired {
                entry: b.entry(
                    t::FRAME_CLASSES,
                    &criteria,
                    priority,
                    a::SET_FRAME_CLASS,
                    &params,
                )?,
                source: source.clone(),
            })
        })
        .collect()
}
