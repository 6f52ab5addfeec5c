//! The datastore: running and startup configuration, a private candidate per session, and
//! the commit that turns a candidate into running.
//!
//! One owner (efbd's configuration task) holds it and calls it in turn; it needs no lock of
//! its own. Every method leaves running and startup either as they were or completely
//! changed, in memory and on disk.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use efb_model::Config;
use efb_model::validation::{Report, Validator};
use efb_yang::diff::{self, Change, RecordKey};
use efb_yang::inactive::Inactive;
use efb_yang::input::{self, Format, InputError, Limit};
use efb_yang::json::{self, Check};
use efb_yang::validate::Scope;
use efb_yang::{DataTree, EditError, Problem, Schema, explain, setlines};
use tracing::{debug, info, info_span, warn};

use crate::error::DatastoreError;
use crate::files;
use crate::limits::check_request;
use crate::sessions::{Holder, Opener, Session, SessionId, SessionInfo, SessionLimits, Sessions};
use crate::southbound::{NoChip, Southbound};
use crate::store::{
    self, CommitKind, HistoryEntry, InactiveChange, PendingConfirm, RecordChange, Store,
};
use crate::types::{
    CommitInfo, CommitOutcome, CommitRequest, Edit, EditOutcome, LoadMode, LoadOutcome,
    OpenOptions, Running, Written,
};

mod confirmed;
mod history;

/// Commits kept in history (`rollback 0` to `rollback 49`).
pub const HISTORY_LENGTH: usize = 50;

/// Candidate, running and startup configuration, and commit history.
pub struct Datastore {
    validator: Validator,
    store: Store,
    dir: PathBuf,
    running: Running,
    sessions: Sessions,
    max_input: Limit,
    pending: Option<PendingConfirm>,
    /// History metadata, newest first (the changes stay on disk until asked for).
    history: VecDeque<CommitInfo>,
    southbound: Box<dyn Southbound>,
    /// Told how long each validation of a candidate took (metrics).
    on_validated: Option<ValidationObserver>,
    /// The commits made while opening, until the owner takes them.
    opened: Vec<Opened>,
}

/// A commit the datastore made as it opened, before any client or chip was there: the boot
/// configuration, or the rollback of a `commit confirmed` whose time ran out while nothing
/// ran. Its owner publishes it as it publishes every commit ([`Datastore::take_opened`]).
pub struct Opened {
    /// [`CommitKind::Boot`] or [`CommitKind::ConfirmTimeout`].
    pub kind: CommitKind,
    pub outcome: CommitOutcome,
    pub took: Duration,
    /// The unconfirmed commit a rollback undid.
    pub undone: Option<u64>,
}

/// Called with the time each validation took.
pub type ValidationObserver = Box<dyn Fn(Duration) + Send + Sync>;

impl Datastore {
    /// Opens (or creates) the datastore in `options.dir`. A running configuration of this
    /// boot is kept; otherwise startup (or the factory default) is loaded as a new commit.
    /// A `commit confirmed` whose time ran out while nothing was running is rolled back now.
    pub fn open(schema: Arc<Schema>, options: OpenOptions) -> Result<Datastore, DatastoreError> {
        let validator =
            Validator::new(schema).map_err(|e| DatastoreError::Storage(e.to_string()))?;
        let store = Store::open(&options.dir, options.commit_batch_records)?;
        let boot_id = options.boot_id.clone().unwrap_or_else(current_boot_id);
        let schema = validator.schema().clone();
        let tree = store.running_tree(&schema)?;
        let last = store.last_commit()?;
        let mut ds = Datastore {
            running: Running {
                tree: DataTree::new(),
                inactive: Inactive::default(),
                config: Arc::new(Config::default()),
                commit_id: last.unwrap_or(0),
            },
            validator,
            dir: options.dir.clone(),
            sessions: Sessions::default(),
            max_input: options.max_input.clone(),
            pending: store.pending()?,
            history: VecDeque::new(),
            southbound: Box::new(NoChip),
            store,
            on_validated: None,
            opened: Vec::new(),
        };
        ds.reload_history()?;
        let same_boot = ds.store.boot_id()?.as_deref() == Some(boot_id.as_str());
        ds.adopt_running(tree)?;
        ds.running.inactive = ds.store.running_inactive(&schema)?;
        if last.is_none() || !same_boot {
            let started = Instant::now();
            let outcome = ds.boot(&options)?;
            ds.store.set_boot_id(&boot_id)?;
            ds.keep_opened(CommitKind::Boot, outcome, started, None);
        }
        let undone = ds.pending.as_ref().map(|p| p.commit_id);
        let started = Instant::now();
        if let Some(outcome) = ds.expire_pending_confirm(SystemTime::now())? {
            ds.keep_opened(CommitKind::ConfirmTimeout, outcome, started, undone);
        }
        Ok(ds)
    }

    fn keep_opened(
        &mut self,
        kind: CommitKind,
        outcome: CommitOutcome,
        started: Instant,
        undone: Option<u64>,
    ) {
        self.opened.push(Opened {
            kind,
            outcome,
            took: started.elapsed(),
            undone,
        });
    }

    /// The commits made while opening (the boot, a rollback of a `commit confirmed` that
    /// ran out of time while nothing ran), once: the owner publishes them.
    pub fn take_opened(&mut self) -> Vec<Opened> {
        std::mem::take(&mut self.opened)
    }

    /// Replaces the southbound (the chip driver) that every commit must get past.
    pub fn set_southbound(&mut self, southbound: Box<dyn Southbound>) {
        self.southbound = southbound;
    }

    /// From now on `observer` is told how long each validation of a candidate takes (at
    /// a commit or a commit check, or a JSON load that validates ahead).
    pub fn on_validation(&mut self, observer: ValidationObserver) {
        self.on_validated = Some(observer);
    }

    /// Runs a validation, timed for the observer.
    fn timed<T>(&self, validate: impl FnOnce(&Validator) -> T) -> T {
        let started = Instant::now();
        let validated = validate(&self.validator);
        if let Some(observe) = &self.on_validated {
            observe(started.elapsed());
        }
        validated
    }

    pub fn schema(&self) -> &Arc<Schema> {
        self.validator.schema()
    }

    pub fn validator(&self) -> &Validator {
        &self.validator
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn running(&self) -> &Running {
        &self.running
    }

    /// The saved startup configuration, if `save` was ever run.
    pub fn startup(&self) -> Result<Option<DataTree>, DatastoreError> {
        self.store.startup_tree(self.schema())
    }

    /// Running as stored, with its typed view; the model revision it was stored under is
    /// checked again in full when it differs from ours.
    fn adopt_running(&mut self, tree: DataTree) -> Result<(), DatastoreError> {
        let revision = &self.schema().module().revision;
        let stored = self.store.model_revision()?;
        let recheck = stored.as_ref().is_some_and(|r| r != revision);
        let validated = self.validator.validate(&tree, !recheck);
        if recheck && !validated.report.is_valid() {
            warn!(
                stored = stored.as_deref().unwrap_or(""),
                problems = ?validated.report.errors,
                "running configuration was written by another model revision and is not valid under this one"
            );
        }
        let config = match validated.config {
            Some(config) => config,
            None => Arc::new(
                self.validator
                    .read(&tree)
                    .map_err(|e| DatastoreError::Storage(format!("running configuration: {e}")))?,
            ),
        };
        self.running.tree = tree;
        self.running.config = config;
        Ok(())
    }

    /// Start-up: running becomes startup (or the factory default) as a commit of its own.
    fn boot(&mut self, options: &OpenOptions) -> Result<CommitOutcome, DatastoreError> {
        let inactive = self.store.startup_inactive(self.schema())?;
        let (tree, source) = match self.startup()? {
            Some(tree) => (tree, "startup configuration".to_string()),
            None => {
                let (path, file) = open_factory_default(options)?;
                let tree = match file {
                    Some(file) => {
                        read_factory_default(self.schema(), &path, file, &options.max_input)?
                    }
                    // The box ships with none.
                    None => DataTree::new(),
                };
                (tree, format!("factory default {}", path.display()))
            }
        };
        info!(%source, "loading the boot configuration");
        let session = self.open_session("system");
        self.load_tree(session, tree)?;
        self.session_mut(session)?.inactive = inactive;
        let outcome = self.commit_as(
            session,
            CommitKind::Boot,
            CommitRequest {
                comment: Some(format!("boot: {source}")),
                ..CommitRequest::default()
            },
        );
        self.close_session(session);
        outcome
    }

    fn reload_history(&mut self) -> Result<(), DatastoreError> {
        let entries = self.store.history()?;
        self.history = entries
            .iter()
            .enumerate()
            .map(|(index, e)| self.info_of(index, e))
            .collect();
        Ok(())
    }

    fn info_of(&self, index: usize, entry: &HistoryEntry) -> CommitInfo {
        CommitInfo {
            index,
            id: entry.id,
            time: entry.time.clone(),
            user: entry.user.clone(),
            comment: entry.comment.clone(),
            kind: entry.kind,
            records: entry.records.len(),
            pending_confirm: self
                .pending
                .as_ref()
                .is_some_and(|p| p.commit_id == entry.id),
        }
    }

    // ----- sessions and candidates -----

    /// A new session with its own candidate, a copy of running. For the daemon's own short
    /// sessions (a gNMI Set, a boot, a rollback), opened and closed in one step: clients
    /// get theirs from [`Datastore::open_client_session`].
    pub fn open_session(&mut self, user: &str) -> SessionId {
        self.sessions.open(user, &self.running)
    }

    /// A session for a client that keeps it across requests, held by `opener.holder`:
    /// its user name checked ([`crate::check_user`]), idle sessions closed first, refused
    /// beyond the [`SessionLimits`].
    pub fn open_client_session(&mut self, opener: &Opener) -> Result<SessionId, DatastoreError> {
        self.sessions.open_client(opener, &self.running)
    }

    pub fn set_session_limits(&mut self, limits: SessionLimits) {
        self.sessions.set_limits(limits);
    }

    /// A request of `holder` named `session`: refused as unknown unless `holder` holds it;
    /// otherwise it is not idle any more.
    pub fn enter_session(
        &mut self,
        session: SessionId,
        holder: &Holder,
    ) -> Result<(), DatastoreError> {
        self.sessions.held_by(session, holder)?;
        self.sessions.touch(session);
        Ok(())
    }

    /// Closes the sessions idle for longer than [`SessionLimits::idle_timeout`], dropping
    /// their candidates; returns them. Their clients are told so at their next request
    /// ([`DatastoreError::SessionExpired`]).
    pub fn expire_idle_sessions(&mut self) -> Vec<SessionInfo> {
        self.sessions.expire_idle()
    }

    /// Closes a session, whoever holds it (efbd's own, a client gone, an admin's
    /// logout); what it was, if it was open. Clients close theirs with
    /// [`Datastore::enter_session`] first.
    pub fn close_session(&mut self, session: SessionId) -> Option<SessionInfo> {
        self.sessions.close(session)
    }

    fn session(&self, session: SessionId) -> Result<&Session, DatastoreError> {
        self.sessions.get(session)
    }

    fn session_mut(&mut self, session: SessionId) -> Result<&mut Session, DatastoreError> {
        self.sessions.get_mut(session)
    }

    pub fn candidate(&self, session: SessionId) -> Result<&DataTree, DatastoreError> {
        Ok(&self.session(session)?.candidate)
    }

    /// Applies edits to the candidate, all or none.
    pub fn edit(&mut self, session: SessionId, edits: &[Edit]) -> Result<(), DatastoreError> {
        let schema = self.schema().clone();
        let s = self.session_mut(session)?;
        let mut tree = s.candidate.clone();
        let mut inactive = s.inactive.clone();
        for edit in edits {
            apply_edit(&schema, &mut tree, &mut inactive, edit)?;
        }
        s.candidate = tree;
        s.inactive = inactive;
        Ok(())
    }

    /// Applies `set` / `delete` lines to the candidate, all or none, and says which
    /// references they broke.
    pub fn edit_lines(
        &mut self,
        session: SessionId,
        text: &str,
    ) -> Result<EditOutcome, DatastoreError> {
        let schema = self.schema().clone();
        let s = self.session_mut(session)?;
        let mut tree = s.candidate.clone();
        let mut inactive = s.inactive.clone();
        let applied = setlines::apply_lines_keeping(&schema, &mut tree, &mut inactive, text)?;
        let broken = explain::broken(&schema, &s.candidate, &tree)
            .iter()
            .map(|d| d.problem(&schema))
            .collect();
        s.candidate = tree;
        s.inactive = inactive;
        Ok(EditOutcome { applied, broken })
    }

    /// Loads RFC 7951 JSON into the candidate.
    pub fn load_json(
        &mut self,
        session: SessionId,
        mode: LoadMode,
        text: &str,
    ) -> Result<LoadOutcome, DatastoreError> {
        self.check_load(Format::Json, text)?;
        let (tree, incomplete, loaded) = match mode {
            LoadMode::Override => {
                // Types wrong: refuse. Only incomplete (a reference missing, a mandatory leaf
                // not given yet): load it, and say what is missing.
                let (tree, validated) = self.timed(|v| v.validate_json(text))?;
                if validated.report.errors.is_empty() {
                    (tree.clone(), Vec::new(), Some((tree, validated)))
                } else {
                    (tree, validated.report.errors, None)
                }
            }
            LoadMode::Merge => (
                json::from_json(self.schema(), text, Check::Types)?,
                Vec::new(),
                None,
            ),
        };
        let schema = self.schema().clone();
        let s = self.session_mut(session)?;
        match mode {
            LoadMode::Override => {
                s.candidate = tree;
                s.inactive = Inactive::default();
            }
            LoadMode::Merge => {
                s.candidate.merge(&schema, &tree);
                s.inactive.absorb(&schema, &mut s.candidate);
            }
        }
        s.loaded = loaded;
        Ok(LoadOutcome { incomplete })
    }

    /// Loads `set` / `delete` lines into the candidate: on top of it (merge), or on an empty
    /// configuration (override). All lines or none.
    pub fn load_lines(
        &mut self,
        session: SessionId,
        mode: LoadMode,
        text: &str,
    ) -> Result<usize, DatastoreError> {
        self.check_load(Format::SetLines, text)?;
        let schema = self.schema().clone();
        let s = self.session_mut(session)?;
        let (mut tree, mut inactive) = match mode {
            LoadMode::Merge => (s.candidate.clone(), s.inactive.clone()),
            LoadMode::Override => (DataTree::new(), Inactive::default()),
        };
        let count = setlines::apply_lines_keeping(&schema, &mut tree, &mut inactive, text)?;
        s.candidate = tree;
        s.inactive = inactive;
        s.loaded = None;
        Ok(count)
    }

    /// Open sessions.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// The open sessions: who, idle for how long, with uncommitted changes or not.
    pub fn sessions(&self) -> Vec<SessionInfo> {
        self.sessions.list()
    }

    /// A load of nothing would make `override` delete everything: refused, as every reader
    /// of configuration refuses it (clients may send content without reading a file).
    fn check_load(&self, format: Format, text: &str) -> Result<(), DatastoreError> {
        input::check_text("the content to load", format, text, &self.max_input)
            .map_err(|e| DatastoreError::Edit(vec![Problem::new("", e.to_string())]))
    }

    /// Loads a whole tree as the candidate.
    fn load_tree(&mut self, session: SessionId, tree: DataTree) -> Result<(), DatastoreError> {
        let s = self.session_mut(session)?;
        s.candidate = tree;
        s.loaded = None;
        Ok(())
    }

    /// Drops the candidate's changes: it becomes running again.
    pub fn discard(&mut self, session: SessionId) -> Result<(), DatastoreError> {
        let running = &self.running;
        self.sessions.get_mut(session)?.reset_to(
            running,
            running.tree.clone(),
            running.inactive.clone(),
        );
        Ok(())
    }

    /// What this session's candidate changes: its own edits, against the running
    /// configuration they were made on.
    pub fn compare(&self, session: SessionId) -> Result<Vec<Change>, DatastoreError> {
        let s = self.session(session)?;
        Ok(diff::diff(self.schema(), &s.base, &s.candidate))
    }

    /// What `show | compare` compares: the configuration the session's edits were made on
    /// (or, with `rollback`, that of commit `rollback` of history), and its candidate (or,
    /// with `compared`, that of commit `compared`: two past commits side by side), each
    /// with what it keeps inactive. Snapshots, free to keep.
    pub fn compared(
        &self,
        session: SessionId,
        rollback: Option<usize>,
        compared: Option<usize>,
    ) -> Result<(Written, Written), DatastoreError> {
        let s = self.session(session)?;
        let base = match rollback {
            Some(index) => self.written_at(index)?,
            None => (s.base.clone(), s.base_inactive.clone()),
        };
        let other = match compared {
            Some(index) => self.written_at(index)?,
            None => (s.candidate.clone(), s.inactive.clone()),
        };
        Ok((base, other))
    }

    /// What the session's candidate keeps inactive.
    pub fn candidate_inactive(&self, session: SessionId) -> Result<&Inactive, DatastoreError> {
        Ok(&self.session(session)?.inactive)
    }

    /// `compare` as `set` / `delete` lines.
    pub fn compare_lines(&self, session: SessionId) -> Result<Vec<String>, DatastoreError> {
        Ok(setlines::render_changes(
            self.schema(),
            &self.compare(session)?,
        ))
    }

    pub fn has_changes(&self, session: SessionId) -> Result<bool, DatastoreError> {
        Ok(self.session(session)?.has_changes())
    }

    /// Loads the configuration of commit `index` (0: running, 1: the one before...) into
    /// the candidate: one of the commits history lists (`rollback 0` also without history).
    pub fn rollback(&mut self, session: SessionId, index: usize) -> Result<(), DatastoreError> {
        self.session(session)?;
        let (tree, inactive) = self.written_at(index)?;
        self.sessions
            .get_mut(session)?
            .reset_to(&self.running, tree, inactive);
        Ok(())
    }

    /// Validates the candidate and, unless only checking, makes it running: on the chip,
    /// on disk and in memory, or nowhere.
    pub fn commit(
        &mut self,
        session: SessionId,
        request: CommitRequest,
    ) -> Result<CommitOutcome, DatastoreError> {
        self.commit_as(session, CommitKind::Commit, request)
    }

    fn commit_as(
        &mut self,
        session: SessionId,
        kind: CommitKind,
        request: CommitRequest,
    ) -> Result<CommitOutcome, DatastoreError> {
        let user = self.session(session)?.user.clone();
        if kind == CommitKind::Commit {
            check_request(&user, &request).inspect_err(|e| warn!(%e, "commit refused"))?;
        }
        let span =
            info_span!("commit", session, user = %user.escape_debug(), check = request.check_only);
        let _entered = span.enter();
        self.rebase(session)?;
        let s = self.session(session)?;
        let candidate = s.candidate.clone();
        let inactive = s.inactive.clone();
        let loaded = s
            .loaded
            .as_ref()
            .filter(|(tree, _)| tree.ptr_eq(&candidate))
            .map(|(_, validated)| validated.clone());
        if candidate == self.running.tree && inactive == self.running.inactive {
            return self.commit_nothing(request);
        }
        let validated = loaded.unwrap_or_else(|| {
            self.timed(|v| v.validate_change(&self.running.tree, &self.running.config, &candidate))
        });
        let Report {
            errors,
            warnings,
            scope,
        } = validated.report;
        if !errors.is_empty() {
            info!(
                errors = errors.len(),
                "commit refused: configuration not valid"
            );
            return Err(DatastoreError::Invalid { errors, warnings });
        }
        let Some(config) = validated.config else {
            return Err(DatastoreError::Storage(
                "validated configuration could not be read".into(),
            ));
        };
        let mut outcome = CommitOutcome::new(
            self.schema().clone(),
            self.running.tree.clone(),
            candidate.clone(),
            scope,
        );
        outcome.warnings = warnings;
        let next = Running {
            tree: candidate,
            inactive,
            config,
            commit_id: self.running.commit_id + 1,
        };
        outcome.set_configs(self.running.config.clone(), next.config.clone());
        if request.check_only {
            outcome.chip = self.southbound.preview(&self.running, &next);
            return Ok(outcome);
        }
        outcome.chip = self
            .southbound
            .apply(&self.running, &next, request.offline)
            .map_err(DatastoreError::Southbound)?;
        // A second `commit confirmed` extends the wait; the rollback still goes back to
        // before the first unconfirmed commit.
        let pending = request.confirm_timeout.map(|timeout| PendingConfirm {
            commit_id: next.commit_id,
            since_commit_id: self
                .pending
                .as_ref()
                .map_or(next.commit_id, |p| p.since_commit_id),
            deadline_ms: millis(SystemTime::now() + timeout),
        });
        // The digest every commit's reply and event tell is worked out beside the writing
        // (0.4 s of a 100 000-flow commit, on the other core).
        let persisted = std::thread::scope(|s| {
            s.spawn(|| outcome.digest());
            let entry = self.history_entry(&user, kind, &request, &next);
            self.persist(&entry, pending.as_ref())
        });
        if let Err(e) = persisted {
            // Disk refused: put the chip back as running still is.
            if let Err(undo) = self.southbound.apply(&next, &self.running, true) {
                warn!(%undo, "could not restore the chip after a failed commit");
            }
            return Err(e);
        }
        outcome.confirmed = self
            .pending
            .as_ref()
            .filter(|_| request.confirm_timeout.is_none())
            .map(|p| p.commit_id);
        outcome.commit_id = Some(next.commit_id);
        outcome.confirm_deadline = pending
            .as_ref()
            .map(|p| UNIX_EPOCH + Duration::from_millis(p.deadline_ms));
        self.pending = pending;
        self.running = next;
        self.sessions.after_commit(session, &self.running);
        // efbd's `commit` event says it to operators, with the user and the hash.
        debug!(id = self.running.commit_id, ?scope, "committed");
        Ok(outcome)
    }

    /// Nothing changed: still confirms a pending `commit confirmed`, as Junos does.
    fn commit_nothing(&mut self, request: CommitRequest) -> Result<CommitOutcome, DatastoreError> {
        let tree = self.running.tree.clone();
        let mut outcome =
            CommitOutcome::new(self.schema().clone(), tree.clone(), tree, Scope::Entries(0));
        if !request.check_only && request.confirm_timeout.is_none() {
            outcome.confirmed = self.confirm()?;
        }
        Ok(outcome)
    }

    /// `save`: running becomes what the box boots with.
    pub fn save(&mut self) -> Result<(), DatastoreError> {
        let records = store::encode_records(self.schema(), &self.running.tree);
        let inactive = self.running.inactive.to_json(self.schema());
        self.store.save_startup(&records, &inactive)?;
        info!(
            id = self.running.commit_id,
            records = records.len(),
            "running saved to startup"
        );
        Ok(())
    }

    /// A session's candidate made on an older running gets the commits made since: refused
    /// if they changed the same paths as the session did (differently).
    fn rebase(&mut self, session: SessionId) -> Result<(), DatastoreError> {
        let schema = self.schema().clone();
        let running = self.running.clone();
        let s = self.session(session)?;
        if s.base_id == running.commit_id {
            return Ok(());
        }
        let mine = diff::diff(&schema, &s.base, &s.candidate);
        let theirs = diff::diff(&schema, &s.base, &running.tree);
        let conflicts = conflicting_paths(&schema, &mine, &theirs, &s.candidate, &running.tree);
        if !conflicts.is_empty() {
            let since = self.commits_since(s.base_id);
            return Err(DatastoreError::Conflict {
                paths: conflicts,
                since,
            });
        }
        // What is inactive: the session's if it changed it, else running's (both changed
        // it differently: refused, as any path both changed).
        let inactive = match (
            s.inactive != s.base_inactive,
            running.inactive != s.base_inactive,
        ) {
            (false, _) => running.inactive.clone(),
            (true, false) => s.inactive.clone(),
            (true, true) if s.inactive == running.inactive => s.inactive.clone(),
            (true, true) => {
                return Err(DatastoreError::Conflict {
                    paths: vec!["the inactive (deactivated) nodes".into()],
                    since: self.commits_since(s.base_id),
                });
            }
        };
        let mut rebased = running.tree.clone();
        diff::apply(&schema, &mut rebased, &mine)?;
        self.session_mut(session)?
            .reset_to(&running, rebased, inactive);
        Ok(())
    }

    fn commits_since(&self, base_id: u64) -> String {
        let later: Vec<String> = self
            .history
            .iter()
            .filter(|c| c.id > base_id)
            .map(|c| format!("{} by {}", c.id, c.user))
            .collect();
        later.join(", ")
    }

    fn history_entry(
        &self,
        user: &str,
        kind: CommitKind,
        request: &CommitRequest,
        next: &Running,
    ) -> HistoryEntry {
        let schema = self.schema();
        let new = &next.tree;
        let inactive = (next.inactive != self.running.inactive).then(|| InactiveChange {
            before: self.running.inactive.to_json(schema),
            after: next.inactive.to_json(schema),
        });
        let records = diff::changed_records(schema, &self.running.tree, new)
            .into_iter()
            .map(|key| RecordChange {
                before: diff::record_data(schema, &self.running.tree, &key)
                    .map(|d| store::record_json(schema, &d)),
                after: diff::record_data(schema, new, &key).map(|d| store::record_json(schema, &d)),
                key: key.display(schema),
            })
            .collect();
        HistoryEntry {
            id: self.running.commit_id + 1,
            time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
            user: user.to_string(),
            comment: request.comment.clone(),
            kind,
            confirm_timeout_s: request.confirm_timeout.map(|t| t.as_secs()),
            records,
            inactive,
        }
    }

    fn persist(
        &mut self,
        entry: &HistoryEntry,
        pending: Option<&PendingConfirm>,
    ) -> Result<(), DatastoreError> {
        let keep_from = (entry.id + 1).saturating_sub(HISTORY_LENGTH as u64);
        let revision = self.schema().module().revision.clone();
        self.store
            .write_commit(entry, pending, keep_from, &revision)?;
        let info = self.info_of(0, entry);
        self.history.push_front(info);
        self.history.truncate(HISTORY_LENGTH);
        for (index, info) in self.history.iter_mut().enumerate() {
            info.index = index;
            info.pending_confirm = pending.is_some_and(|p| p.commit_id == info.id);
        }
        Ok(())
    }
}

/// One edit; what it makes at or below an inactive node edits that node (see
/// [`Inactive::absorb`]), a delete there deletes it.
fn apply_edit(
    schema: &Schema,
    tree: &mut DataTree,
    inactive: &mut Inactive,
    edit: &Edit,
) -> Result<(), DatastoreError> {
    match edit {
        Edit::Set { path, value } => tree.set(schema, path, value.clone())?,
        Edit::Merge { path, data } => tree.merge(schema, &data.subtree(path)),
        Edit::Replace { path, data } => tree.replace(schema, path, data),
        Edit::Create { path, data } => tree.create(schema, path, data)?,
        Edit::Delete { path } => inactive.delete(schema, tree, path)?,
        Edit::Remove { path } => match inactive.delete(schema, tree, path) {
            Err(EditError::Missing(_)) | Ok(()) => {}
            Err(e) => return Err(e.into()),
        },
    }
    inactive.absorb(schema, tree);
    Ok(())
}

/// Undoes one commit on `tree`: each record it changed gets its value from before.
fn revert(
    schema: &Schema,
    tree: &mut DataTree,
    entry: &HistoryEntry,
) -> Result<(), DatastoreError> {
    for record in &entry.records {
        let key = RecordKey::parse(schema, &record.key)?;
        let before = record
            .before
            .as_deref()
            .map(|text| json::from_trusted_json(schema, text))
            .transpose()?;
        diff::put_record(schema, tree, &key, before.as_ref());
    }
    Ok(())
}

/// Paths this session changed that the commits since its base changed too, where the two
/// do not agree on the result.
fn conflicting_paths(
    schema: &Schema,
    mine: &[Change],
    theirs: &[Change],
    candidate: &DataTree,
    running: &DataTree,
) -> Vec<String> {
    let mut paths = Vec::new();
    for a in mine {
        let path = a.path();
        let touched = theirs.iter().any(|b| b.path().overlaps(path));
        if touched && candidate.subtree(path) != running.subtree(path) {
            let text = path.display(schema);
            if !paths.contains(&text) {
                paths.push(text);
            }
        }
    }
    paths
}

/// The file name of the factory default in the datastore directory, when no other is set.
const FACTORY_DEFAULT: &str = "factory-default.json";

const FACTORY_DEFAULT_SETTING: &str = "factory default (setting `factory_default`)";

/// The factory default, opened and judged, or None when there is none. The default one,
/// `DIR/factory-default.json`, is a file of efbd's directory: never read through a link,
/// owned by root or efbd's account, writable by nobody else (whoever may write it decides
/// the configuration the box boots). One named with `--factory-default` is an
/// administrator's file: links are followed, and the file they lead to is judged the same.
fn open_factory_default(
    options: &OpenOptions,
) -> Result<(PathBuf, Option<std::fs::File>), DatastoreError> {
    let (path, opened, hint) = match &options.factory_default {
        Some(path) => (path.clone(), files::open_configured(path), ""),
        None => {
            let path = options.dir.join(FACTORY_DEFAULT);
            let opened = files::open_trusted(&path);
            let hint = "; to boot the file the link leads to, name that file with \
                        --factory-default FILE instead";
            (path, opened, hint)
        }
    };
    match opened {
        Ok(file) => Ok((path, Some(file))),
        Err(e) if e.is_missing() => Ok((path, None)),
        Err(e) => {
            let hint = if matches!(e, files::FileError::Symlink { .. }) {
                hint
            } else {
                ""
            };
            Err(DatastoreError::file(FACTORY_DEFAULT_SETTING, e, hint))
        }
    }
}

/// The factory default as any configuration file is read (within the input limit, not
/// empty), validated in full.
fn read_factory_default(
    schema: &Schema,
    path: &Path,
    file: std::fs::File,
    limit: &Limit,
) -> Result<DataTree, DatastoreError> {
    let shown = path.display().to_string();
    let in_file = |problems: Vec<Problem>| {
        DatastoreError::Edit(
            problems
                .into_iter()
                .map(|p| Problem::new(p.path, format!("{shown}: {}", p.message)))
                .collect(),
        )
    };
    let content = match input::read_opened(&shown, file, limit) {
        Ok(content) => content,
        Err(e @ InputError::Unreadable { .. }) => {
            return Err(DatastoreError::Storage(e.to_string()));
        }
        Err(e) => return Err(DatastoreError::Edit(vec![Problem::new("", e.to_string())])),
    };
    content
        .tree(schema, Check::Complete)
        .map_err(|e| in_file(e.problems()))
}

fn current_boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown-boot".to_string())
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
