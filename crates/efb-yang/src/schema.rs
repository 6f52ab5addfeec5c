//! The YANG schema, embedded in the binary: a libyang context holding the module, and a
//! compact Rust index of its data nodes (names, kinds, keys, types, defaults, descriptions)
//! that the data tree, JSON, set lines, the shell and gNMI all navigate.

use std::collections::HashMap;
use std::fmt;

use yang2::context::{Context, ContextFlags, EmbeddedModuleKey, EmbeddedModules};
use yang2::schema::SchemaNode;
use yang2::utils::Binding;

use crate::ly::{self, BaseType};
use crate::value::Value;
use crate::{Error, Problem};

pub use crate::value::JsonKind;

mod index;
mod node;
mod types;

use index::IndexBuilder;
use types::refusal;

pub use node::{CaseOf, NodeKind, SchemaId, SchemaNodeInfo};
pub use types::{ValueError, Verdict, describe_type};

/// Name of the module this management plane serves.
pub const MODULE_NAME: &str = "ecofilter-balancer";

/// The module text, embedded: no search path is read at run time.
pub const MODULE_TEXT: &str = include_str!("../../../yang/ecofilter-balancer.yang");

/// The schema: a libyang context with the module loaded, and the Rust index of its nodes.
pub struct Schema {
    ctx: Context,
    nodes: Vec<SchemaNodeInfo>,
    /// libyang's compiled node behind each entry (0 for RPC input/output).
    raw: Vec<usize>,
    by_raw: HashMap<usize, SchemaId>,
    roots: Vec<SchemaId>,
    rpcs: Vec<SchemaId>,
    notifications: Vec<SchemaId>,
    module: ModuleInfo,
    independent: Vec<SchemaId>,
    references: Vec<Reference>,
    reaper: Reaper,
}

/// A configuration leaf (or leaf-list) whose values name an entry of a list by its key: a
/// leafref to the key of a single-key list (every reference the module has).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reference {
    pub from: SchemaId,
    /// The list whose key the values name.
    pub to: SchemaId,
}

/// Frees libyang data trees on a thread of its own: freeing a parsed 100 000-flow tree takes
/// a fifth of a second nobody needs to wait for. Stopped (and drained) before the context
/// the trees belong to goes away.
struct Reaper {
    queue: Option<std::sync::mpsc::Sender<usize>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// One-shot tools leave parsed trees to the end of the process instead.
    leak: std::sync::atomic::AtomicBool,
}

impl Reaper {
    fn start() -> Reaper {
        let (queue, trees) = std::sync::mpsc::channel::<usize>();
        let thread = std::thread::Builder::new()
            .name("libyang-free".into())
            .spawn(move || {
                for tree in trees {
                    // SAFETY: a tree root handed over by `Schema::discard`, owned by nobody
                    // else, of a context that outlives this thread (see `Drop for Schema`).
                    unsafe { yang2::ffi::lyd_free_all(tree as *mut yang2::ffi::lyd_node) };
                }
            })
            .ok();
        Reaper {
            queue: thread.as_ref().map(|_| queue),
            thread,
            leak: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Drop for Schema {
    fn drop(&mut self) {
        drop(self.reaper.queue.take());
        if let Some(thread) = self.reaper.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Identity of the loaded module, as gNMI Capabilities and the shell report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    pub name: String,
    pub revision: String,
    pub namespace: String,
    pub prefix: String,
    pub organization: String,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("module", &self.module)
            .field("nodes", &self.nodes.len())
            .finish()
    }
}

impl Schema {
    /// Loads the embedded module. Fails if libyang reports any error or warning.
    pub fn load() -> Result<Schema, Error> {
        Schema::load_text(MODULE_TEXT)
    }

    /// Loads a module text (tests load variants of the module this way).
    pub fn load_text(text: &'static str) -> Result<Schema, Error> {
        let revision = module_revision(text)
            .ok_or_else(|| Error::Schema("the module has no revision statement".into()))?;
        let mut ctx = Context::new(ContextFlags::NO_YANGLIBRARY | ContextFlags::DISABLE_SEARCHDIRS)
            .map_err(|e| Error::Schema(e.to_string()))?;
        ly::store_all_errors();
        let mut embedded = EmbeddedModules::new();
        embedded.insert(
            EmbeddedModuleKey::new(MODULE_NAME, Some(revision), None, None),
            text,
        );
        ctx.set_embedded_modules(&embedded);
        let raw = ly::context_raw(&ctx);
        ly::clear_errors(raw);
        if let Err(e) = ctx.load_module(MODULE_NAME, Some(revision), &[]) {
            let mut problems = ly::take_errors(raw);
            if problems.is_empty() {
                problems.push(Problem::new("", e.to_string()));
            }
            return Err(Error::Invalid(problems));
        }
        let warnings = ly::take_errors(raw);
        if !warnings.is_empty() {
            return Err(Error::Invalid(warnings));
        }
        Schema::index(ctx)
    }

    fn index(ctx: Context) -> Result<Schema, Error> {
        let module = ctx
            .get_module_latest(MODULE_NAME)
            .ok_or_else(|| Error::Schema(format!("module {MODULE_NAME} did not load")))?;
        let info = ModuleInfo {
            name: module.name().to_string(),
            revision: module.revision().unwrap_or_default().to_string(),
            namespace: module.namespace().to_string(),
            prefix: module.prefix().to_string(),
            organization: module.organization().unwrap_or_default().to_string(),
        };
        let mut builder = IndexBuilder::default();
        let roots = builder.add_siblings(module.data(), None, &[]);
        let rpcs = builder.add_siblings(module.rpcs(), None, &[]);
        let notifications = builder.add_siblings(module.notifications(), None, &[]);
        let IndexBuilder { nodes, raw, by_raw } = builder;
        let mut schema = Schema {
            ctx,
            nodes,
            raw,
            by_raw,
            roots,
            rpcs,
            notifications,
            module: info,
            independent: Vec::new(),
            references: Vec::new(),
            reaper: Reaper::start(),
        };
        schema.references = schema.find_references();
        schema.independent = schema.find_independent_lists();
        Ok(schema)
    }

    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// For tools that run once and exit: parsed libyang trees are not freed at all (the
    /// process exit returns their memory far faster than libyang frees them node by node).
    pub fn keep_parsed_trees_until_exit(&self) {
        self.reaper
            .leak
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Frees a libyang tree of this schema, in the background when possible.
    pub(crate) fn discard(&self, tree: yang2::data::DataTree<'_>) {
        if self.reaper.leak.load(std::sync::atomic::Ordering::Relaxed) {
            std::mem::forget(tree);
            return;
        }
        match &self.reaper.queue {
            Some(queue) => {
                let raw = tree.into_raw() as usize;
                if let Err(returned) = queue.send(raw) {
                    // SAFETY: the reaper is gone; free it here, as drop would have.
                    unsafe { yang2::ffi::lyd_free_all(returned.0 as *mut yang2::ffi::lyd_node) };
                }
            }
            None => drop(tree),
        }
    }

    pub fn module(&self) -> &ModuleInfo {
        &self.module
    }

    pub fn node(&self, id: SchemaId) -> &SchemaNodeInfo {
        &self.nodes[id.index()]
    }

    pub fn nodes(&self) -> impl Iterator<Item = &SchemaNodeInfo> {
        self.nodes.iter()
    }

    /// Top-level data nodes (`ports`, `ecofilter-balancer`, `liveness`).
    pub fn roots(&self) -> &[SchemaId] {
        &self.roots
    }

    pub fn rpcs(&self) -> &[SchemaId] {
        &self.rpcs
    }

    pub fn notifications(&self) -> &[SchemaId] {
        &self.notifications
    }

    pub fn root(&self, name: &str) -> Option<SchemaId> {
        let name = name
            .strip_prefix(&format!("{MODULE_NAME}:"))
            .unwrap_or(name);
        self.roots
            .iter()
            .chain(&self.rpcs)
            .chain(&self.notifications)
            .copied()
            .find(|id| self.node(*id).name == name)
    }

    /// A data child of `parent` by name (a module prefix `ecofilter-balancer:` is accepted).
    pub fn child(&self, parent: SchemaId, name: &str) -> Option<SchemaId> {
        let name = name
            .strip_prefix(&format!("{MODULE_NAME}:"))
            .unwrap_or(name);
        self.node(parent)
            .children
            .iter()
            .copied()
            .find(|id| self.node(*id).name == name)
    }

    /// The node at a schema path such as `/ecofilter-balancer/flow/match/dst-port`.
    pub fn find(&self, path: &str) -> Option<SchemaId> {
        let mut steps = path.split('/').filter(|s| !s.is_empty());
        let mut id = self.root(steps.next()?)?;
        for step in steps {
            id = self.child(id, step)?;
        }
        Some(id)
    }

    pub(crate) fn by_raw(&self, node: &SchemaNode<'_>) -> Option<SchemaId> {
        self.by_raw.get(&(node.as_raw() as usize)).copied()
    }

    /// The libyang schema node behind an index entry (none for RPC input and output, which
    /// libyang does not expose as nodes).
    pub(crate) fn ly_node(&self, id: SchemaId) -> Option<SchemaNode<'_>> {
        let raw = self.raw[id.index()];
        // SAFETY: `raw` was read from this context's compiled schema, which lives as long as
        // `self.ctx`.
        (raw != 0).then(|| unsafe { SchemaNode::from_raw(&self.ctx, raw as *mut _) })
    }

    /// Checks a leaf value against its type and returns it in canonical form. A leaf of
    /// typedef `ip-protocol` takes a protocol's name for its number (`udp`: 17), whoever
    /// reads the value: typed lines, files, pipes and `efb-config` alike.
    pub fn value(&self, id: SchemaId, text: &str) -> Result<Value, ValueError> {
        let node = self
            .ly_node(id)
            .filter(|_| !self.node(id).is_inner())
            .ok_or_else(|| ValueError::NotALeaf {
                node: self.node(id).name.clone(),
            })?;
        let named;
        let text = match self.protocol_number(id, text) {
            Some(n) => {
                named = n.to_string();
                named.as_str()
            }
            None => text,
        };
        let checked = ly::check_value(&self.ctx, &node, text)
            .map_err(|_| refusal(self.node(id).leaf_type.as_ref(), text))?;
        let kind = match self.node(id).leaf_type.as_ref().map(|t| t.base) {
            Some(BaseType::Union) => JsonKind::of(checked.base),
            _ => self.node(id).json_kind(),
        };
        Ok(Value::new(checked.canonical, kind))
    }

    /// Whether the leaf holds an IP protocol (typedef `ip-protocol`).
    pub fn is_protocol_leaf(&self, id: SchemaId) -> bool {
        let node = self.node(id);
        node.kind == NodeKind::Leaf
            && node
                .leaf_type
                .as_ref()
                .is_some_and(|t| t.typedef.as_deref() == Some(crate::protocols::TYPEDEF))
    }

    fn protocol_number(&self, id: SchemaId, text: &str) -> Option<u8> {
        self.is_protocol_leaf(id)
            .then(|| crate::protocols::name_to_number(text))
            .flatten()
    }

    /// Whether the node sits in configuration (not state, RPC or notification).
    pub fn is_config_data(&self, id: SchemaId) -> bool {
        let node = self.node(id);
        node.config && self.roots.contains(&self.top(id))
    }

    /// The top-level ancestor of a node (the node itself when it is top-level).
    pub fn top(&self, mut id: SchemaId) -> SchemaId {
        while let Some(parent) = self.node(id).parent {
            id = parent;
        }
        id
    }

    /// Ancestors from the top down to `id` included.
    pub fn lineage(&self, id: SchemaId) -> Vec<SchemaId> {
        let mut chain = vec![id];
        let mut cur = id;
        while let Some(parent) = self.node(cur).parent {
            chain.push(parent);
            cur = parent;
        }
        chain.reverse();
        chain
    }

    /// Configuration lists whose entries can be validated one by one: nothing in the
    /// schema refers into them (no leafref targets them, no must/when anywhere), no
    /// constraint spans their entries (no min/max-elements, no unique), and their own
    /// references name entries of top-level lists (whose changes are records, so that
    /// `validate::Affected` finds what a change affects). For such a list, a
    /// valid configuration changed only in some of its entries is valid exactly when the
    /// rest of the configuration plus those entries is. With 100 000 flows, that is what
    /// keeps a one-flow commit fast.
    pub fn independent_lists(&self) -> &[SchemaId] {
        &self.independent
    }

    /// The configuration's references between entries (`ecofilter-balancer link wan-port`
    /// names a `ports port`): what a delete may leave dangling.
    pub fn references(&self) -> &[Reference] {
        &self.references
    }

    /// A list right under a top-level container (`ports port`, `ecofilter-balancer link`).
    fn is_top_level_list(&self, id: SchemaId) -> bool {
        self.node(id)
            .parent
            .is_some_and(|p| self.node(p).parent.is_none())
    }

    fn find_references(&self) -> Vec<Reference> {
        self.nodes
            .iter()
            .filter(|n| n.config && matches!(n.kind, NodeKind::Leaf | NodeKind::LeafList))
            .filter_map(|n| {
                let path = n.leaf_type.as_ref()?.leafref_path.as_ref()?;
                let key = self.find(&resolve_leafref(&n.schema_path, path))?;
                let list = self.node(key).parent?;
                (self.node(list).keys == [key]).then_some(Reference {
                    from: n.id,
                    to: list,
                })
            })
            .collect()
    }

    fn find_independent_lists(&self) -> Vec<SchemaId> {
        if self.nodes.iter().any(|n| n.constrained) {
            return Vec::new();
        }
        let targets: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.config)
            .filter_map(|n| {
                let path = n.leaf_type.as_ref()?.leafref_path.as_ref()?;
                Some(resolve_leafref(&n.schema_path, path))
            })
            .collect();
        self.nodes
            .iter()
            .filter(|n| {
                n.kind == NodeKind::List
                    && n.config
                    && !n.bounded
                    && !n.user_ordered
                    && self.is_top_level_list(n.id)
                    && self.roots.contains(&self.top(n.id))
                    && !targets
                        .iter()
                        .any(|t| within(t, &unprefixed(&n.schema_path)))
                    && self.references.iter().all(|r| {
                        !self.lineage(r.from).contains(&n.id) || self.is_top_level_list(r.to)
                    })
            })
            .map(|n| n.id)
            .collect()
    }

    /// True when a node of one case would exclude `existing` from the same parent.
    pub(crate) fn excludes(&self, new: SchemaId, existing: SchemaId) -> bool {
        let a = &self.node(new).cases;
        let b = &self.node(existing).cases;
        a.iter()
            .zip(b)
            .find(|(x, y)| x.choice == y.choice && x.case != y.case)
            .is_some()
    }
}

/// A leafref path, made absolute and without prefixes, from the leaf holding it.
fn resolve_leafref(leaf_path: &str, target: &str) -> String {
    let target = unprefixed(target);
    if target.starts_with('/') {
        return target;
    }
    let mut steps: Vec<String> = unprefixed(leaf_path)
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    for step in target.split('/') {
        match step {
            ".." => {
                steps.pop();
            }
            "" | "." => {}
            name => steps.push(name.to_string()),
        }
    }
    format!("/{}", steps.join("/"))
}

/// `/efb:a/efb:b[x=current()]` -> `/a/b`.
fn unprefixed(path: &str) -> String {
    let mut out = String::new();
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ if depth > 0 => {}
            _ => out.push(c),
        }
    }
    out.split('/')
        .map(|step| step.rsplit(':').next().unwrap_or(step))
        .collect::<Vec<_>>()
        .join("/")
}

fn within(path: &str, ancestor: &str) -> bool {
    path == ancestor || path.starts_with(&format!("{ancestor}/"))
}

fn module_revision(text: &str) -> Option<&str> {
    let at = text.find("revision ")?;
    let rest = &text[at + "revision ".len()..];
    let end = rest.find(|c: char| c.is_whitespace() || c == '{' || c == ';')?;
    Some(rest[..end].trim_matches('"'))
}
