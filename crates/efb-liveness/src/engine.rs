//! The liveness state machine, judged on what the chip records. Every `interval` each probed
//! unit gets one round: one keep-alive sent to the unit's multicast group, which the chip
//! copies out of both ports of each of its pairs (p4/efb.p4). The chip counts a copy that
//! comes back only while its round is still the unit's newest, so a round's deadline is the
//! next round's entry into the chip, on the chip's clock. efbd reads the counts after each
//! round it sends ([`Engine::wanted`], [`Engine::recorded`]) and judges every round an
//! entered one has closed: a pair's round returned when both copies were counted, otherwise
//! it is lost. What it reads is the unit's two tallies (the `tally` module), and every
//! pair's cells only when the tallies cannot say that every copy came back. A late read
//! loses nothing, and a round the chip has not seen is not judged: if efbd stops sending,
//! nothing is judged.
//!
//! `probes-down-count` lost rounds in a row take the pair down, `probes-up-count` returned
//! rounds in a row bring it up. The round whose loss would take a pair down gets
//! `round-timeout`: the unit's next round is sent that long after it (plus
//! [`DECISIVE_GRACE`]) instead of a whole interval, which closes it sooner; the others keep the
//! whole interval. A new pair is `init` (and takes traffic) until its first verdict; it counts
//! rounds from `initial-delay` after it starts being probed (efbd starting, the pair or its
//! profile configured, its ports changed), and a unit sends none before one of its pairs
//! counts them.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use efb_model::Profile;

use crate::keepalive::{Direction, KeepAlive};
use crate::records::{Records, Returned, Wanted, cell};
use crate::tally::{Tallies, parity};

/// Added to `round-timeout` before the round that closes a decisive one is sent: the
/// control path to the chip takes some of it, and a round that entered too soon would cut
/// the decisive round's time short.
pub const DECISIVE_GRACE: Duration = Duration::from_millis(1);
/// How long after sending a round efbd reads what the chip recorded, and reads again while
/// the chip has not seen the round yet.
pub const READ_AFTER: Duration = Duration::from_millis(1);
/// How often every pair's records are read even when the unit's tallies say all came
/// back: the time on path shown is at most this old.
pub const FULL_READ_EVERY: Duration = Duration::from_secs(1);

/// How a pair is probed (its unit's liveness profile).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    pub initial_delay: Duration,
    pub interval: Duration,
    /// How long a round's keep-alives have to come back; at most `interval`.
    pub round_timeout: Duration,
    pub down_count: u16,
    pub up_count: u16,
}

impl From<&Profile> for Timing {
    fn from(p: &Profile) -> Timing {
        Timing {
            initial_delay: Duration::from_millis(u64::from(p.initial_delay_ms)),
            interval: Duration::from_millis(u64::from(p.interval_ms.max(1))),
            round_timeout: Duration::from_millis(u64::from(
                p.round_timeout_ms.clamp(1, p.interval_ms.max(1)),
            )),
            down_count: p.probes_down_count.max(1),
            up_count: p.probes_up_count.max(1),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairStatus {
    /// Not judged yet; takes traffic.
    Init,
    Up,
    /// Its traffic is bypassed.
    Down,
}

impl PairStatus {
    /// The YANG enum name.
    pub fn as_str(self) -> &'static str {
        match self {
            PairStatus::Init => "init",
            PairStatus::Up => "up",
            PairStatus::Down => "down",
        }
    }

    /// Whether the pair takes traffic.
    pub fn is_live(self) -> bool {
        self != PairStatus::Down
    }
}

/// A pair to probe, as the configuration and the chip name it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairSpec {
    pub unit: String,
    pub pair: String,
    pub profile: String,
    /// The chip's unit id: its multicast group, and its cell of the round register.
    pub unit_id: u8,
    /// The chip's pair id (the copies' replica ids, its cells of the return registers).
    pub id: u8,
    /// Port names and device ports, LAN then WAN.
    pub ports: [(String, u32); 2],
    pub timing: Timing,
}

/// What the state tree shows of a pair.
#[derive(Clone, Debug)]
pub struct PairState {
    pub unit: String,
    pub pair: String,
    pub profile: String,
    /// LAN then WAN port name.
    pub ports: [String; 2],
    pub status: PairStatus,
    pub last_change: Option<SystemTime>,
    /// Status changes since the pair was first probed.
    pub changes: u64,
    /// Keep-alives sent out of each port, and lost of those, by [`Direction`].
    pub sent: [u64; 2],
    pub lost: [u64; 2],
    /// Time on path of the newest keep-alive counted, by [`Direction`] it left in; none when
    /// the last round judged lost it (a dead pair has no time on path).
    pub time_on_path_ns: [Option<u64>; 2],
    /// Rounds in which a keep-alive did not come back: `probes-down-count` of them in a row
    /// take the pair down (`lost` counts keep-alives, two a round).
    pub rounds_lost: u64,
    /// Lost rounds since the last complete one.
    pub lost_in_a_row: u32,
    /// Why the status last changed.
    pub reason: Option<String>,
}

impl PairState {
    pub fn probes_lost(&self) -> u64 {
        self.lost.iter().sum()
    }
}

/// A pair's status changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub unit: String,
    pub pair: String,
    pub old: PairStatus,
    pub new: PairStatus,
    pub reason: String,
    /// When the verdict was reached (to measure how fast the chip follows).
    pub at: Instant,
    /// The pair's ports (LAN then WAN): name and device port, so that whoever gets the
    /// change can say that a port, not the filter, went down.
    pub ports: [(String, u32); 2],
}

/// A round to send: one packet-out to the unit's multicast group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Round {
    pub unit: String,
    /// The unit's chip id, which is its multicast group.
    pub unit_id: u8,
    pub seq: u32,
    pub frame: Vec<u8>,
}

/// A unit's rounds.
#[derive(Clone, Debug)]
struct UnitRounds {
    id: u8,
    timing: Timing,
    /// When its next round is due (none before one of its pairs counts rounds).
    next_at: Instant,
    /// The rounds sent, oldest first, until every pair has judged them.
    sent: Vec<u32>,
    /// When the chip's records are to be read (after a round, again while it has not
    /// entered).
    read_at: Option<Instant>,
    /// The last round: when it was sent, and when it was due (a late wake-up sends it
    /// after).
    last_sent_at: Option<(Instant, Instant)>,
    /// The newest round sent: the next one has the other parity (see [`Tallies`]).
    last_seq: Option<u32>,
    tallies: Tallies,
    /// Rounds before this one are judged (the unit's newest round at the last read that
    /// judged).
    judged_below: Option<u32>,
    /// When every pair's records are read next (none: at the next read, as the tallies
    /// could not tell or a pair has no time on path; else [`FULL_READ_EVERY`] after the
    /// last).
    full_read_at: Option<Instant>,
    /// Whether its records were read since its next round came due (a quiet unit's are
    /// read then, before the round, instead of after each round).
    read_when_due: bool,
}

#[derive(Clone, Debug)]
struct Probed {
    spec: PairSpec,
    state: PairState,
    /// When it starts counting rounds (after the initial delay).
    starts_at: Instant,
    /// The first round it counts.
    first: Option<u32>,
    /// The newest round judged.
    judged: Option<u32>,
    /// Per direction: the chip's record at the last read, and the rounds it says came back
    /// since (not judged yet).
    seen: [Option<Returned>; 2],
    returned: [BTreeSet<u32>; 2],
    lost_run: u32,
    returned_run: u32,
}

/// Every probed pair, by unit.
#[derive(Debug, Default)]
pub struct Engine {
    pairs: BTreeMap<(String, String), Probed>,
    units: BTreeMap<String, UnitRounds>,
    seq: u32,
}

impl Engine {
    pub fn new() -> Engine {
        Engine::default()
    }

    /// A new connection to the chip, whose newest round is `seq`: rounds are numbered
    /// above it (so that records of an earlier run never pass for this one's), rounds
    /// sent to the chip before count neither way (it may have restarted without them),
    /// and each pair's counts start again from what the chip holds.
    pub fn reconnected(&mut self, seq: u32) {
        self.seq = self.seq.max(seq);
        for probed in self.pairs.values_mut() {
            let open = (self.units.get(&probed.spec.unit))
                .map_or(0, |unit| probed.open_rounds(&unit.sent));
            for sent in &mut probed.state.sent {
                *sent = sent.saturating_sub(open);
            }
            probed.seen = [None; 2];
            probed.returned = [BTreeSet::new(), BTreeSet::new()];
            probed.first = None;
            probed.judged = None;
        }
        for unit in self.units.values_mut() {
            unit.sent.clear();
            unit.read_at = None;
            unit.tallies = Tallies::default();
            unit.judged_below = None;
        }
    }

    /// Probes exactly `specs` from now on. A new pair, or one whose ports or ids changed,
    /// starts over in `init` and counts rounds after its initial delay; a pair whose
    /// profile timing changed keeps its status; pairs not in `specs` are forgotten.
    pub fn sync(&mut self, specs: Vec<PairSpec>, now: Instant) {
        let mut next = BTreeMap::new();
        for spec in specs {
            let key = (spec.unit.clone(), spec.pair.clone());
            let kept = self.pairs.remove(&key).filter(|old| {
                old.spec.id == spec.id
                    && old.spec.unit_id == spec.unit_id
                    && old.spec.ports == spec.ports
            });
            let probed = match kept {
                Some(mut old) => {
                    old.state.profile = spec.profile.clone();
                    old.spec = spec;
                    old
                }
                None => Probed::new(spec, now),
            };
            next.insert(key, probed);
        }
        self.pairs = next;
        let mut units = BTreeMap::new();
        for probed in self.pairs.values() {
            let spec = &probed.spec;
            let unit = units.entry(spec.unit.clone()).or_insert_with(|| {
                match self
                    .units
                    .remove(&spec.unit)
                    .filter(|u| u.id == spec.unit_id)
                {
                    Some(mut kept) => {
                        kept.timing = spec.timing;
                        kept
                    }
                    None => UnitRounds {
                        id: spec.unit_id,
                        timing: spec.timing,
                        next_at: probed.starts_at,
                        sent: Vec::new(),
                        read_at: None,
                        last_sent_at: None,
                        last_seq: None,
                        tallies: Tallies::default(),
                        judged_below: None,
                        full_read_at: None,
                        read_when_due: false,
                    },
                }
            });
            if unit.sent.is_empty() {
                unit.next_at = unit.next_at.min(probed.starts_at.max(now));
            }
        }
        self.units = units;
    }

    /// When there is something to do next: a round to send or records to read.
    pub fn next_due(&self) -> Option<Instant> {
        self.units
            .values()
            .flat_map(|u| [Some(u.next_at), u.read_at])
            .flatten()
            .min()
    }

    /// The rounds due now.
    pub fn tick(&mut self, now: Instant) -> Vec<Round> {
        let mut rounds = Vec::new();
        for (name, unit) in &mut self.units {
            let mut counting = self
                .pairs
                .values()
                .filter(|p| p.spec.unit == *name && p.starts_at <= now)
                .peekable();
            if unit.next_at > now || counting.peek().is_none() {
                continue;
            }
            // A pair's counts start from what the chip holds when it starts: read that
            // before its first round.
            if counting.any(|p| p.seen.contains(&None)) {
                unit.read_at.get_or_insert(now);
                continue;
            }
            // A quiet unit (every pair up, nothing lost, no verdict near) is read when its
            // round is due, before sending it: that read judges the round before, and no
            // read of its own follows each round. Anything else is read after each round.
            let quiet = unit.full_read_at.is_some()
                && (self.pairs.values())
                    .filter(|p| p.spec.unit == *name)
                    .all(Probed::is_quiet);
            if quiet && !unit.read_when_due {
                unit.read_at.get_or_insert(now);
                continue;
            }
            unit.read_when_due = false;
            let seq = unit.next_seq(self.seq);
            self.seq = seq;
            unit.sent.push(seq);
            unit.read_at = (!quiet).then_some(now + READ_AFTER);
            unit.last_sent_at = Some((now, unit.next_at.min(now)));
            let decisive = self
                .pairs
                .values_mut()
                .filter(|p| p.spec.unit == *name && p.starts_at <= now)
                .fold(false, |decisive, p| {
                    p.first.get_or_insert(seq);
                    for sent in &mut p.state.sent {
                        *sent += 1;
                    }
                    decisive || p.decisive_next()
                });
            unit.next_at = unit.after_last(decisive).unwrap_or(now);
            rounds.push(Round {
                unit: name.clone(),
                unit_id: unit.id,
                seq,
                frame: KeepAlive::round(unit.id, seq, 0).encode(),
            });
        }
        rounds
    }

    /// The round could not be sent (the chip is away): it counts neither way.
    pub fn not_sent(&mut self, unit: &str, seq: u32) {
        let Some(rounds) = self.units.get_mut(unit) else {
            return;
        };
        rounds.sent.retain(|&s| s != seq);
        // The next round's parity is chosen against the last one the chip may have seen.
        rounds.last_seq = rounds.sent.last().copied();
        for probed in self.pairs.values_mut().filter(|p| p.spec.unit == unit) {
            if probed.first == Some(seq) {
                probed.first = None;
            }
            if probed.first.is_some_and(|first| first < seq) || probed.first.is_none() {
                for sent in &mut probed.state.sent {
                    *sent = sent.saturating_sub(1);
                }
            }
        }
    }

    /// What is to be read now: the units whose records are due, and the pairs' cells of
    /// those whose tallies will not do.
    pub fn wanted(&self, now: Instant) -> Option<Wanted> {
        let mut wanted = Wanted::default();
        for (name, unit) in &self.units {
            if unit.read_at.is_none_or(|at| at > now) {
                continue;
            }
            wanted.units.push(unit.id);
            if !unit.read_when_due_pending(now) {
                wanted.after_round.push(unit.id);
            }
            let mut pairs = self.pairs.values().filter(|p| p.spec.unit == *name);
            let full = unit.full_read_at.is_none_or(|at| at <= now)
                || pairs.clone().any(|p| p.seen.contains(&None));
            if full {
                wanted.cells.extend(pairs.by_ref().flat_map(Probed::cells));
            }
        }
        (!wanted.units.is_empty()).then_some(wanted)
    }

    /// The read of `wanted` failed (no connection, no answer): it is tried again at `at`,
    /// and rounds go on meanwhile.
    pub fn unread(&mut self, wanted: &Wanted, at: Instant) {
        for unit in self.units.values_mut() {
            if wanted.units.contains(&unit.id) {
                unit.read_at = Some(at);
                unit.read_when_due = true;
            }
        }
    }

    /// What the chip recorded (a read of [`Engine::wanted`]): judges every round of those
    /// units that a later round has closed.
    pub fn recorded(&mut self, records: &Records, now: Instant, wall: SystemTime) -> Vec<Change> {
        let mut changes = Vec::new();
        for (name, unit) in &mut self.units {
            let Some(&entered) = records.rounds.get(&unit.id) else {
                continue;
            };
            unit.read_at = match unit.sent.last() {
                Some(&seq) if entered < seq => Some(now + READ_AFTER),
                _ => None,
            };
            unit.read_when_due |= unit.next_at <= now;
            let Some(records) = unit.records_to_judge(records, entered, &self.pairs, name, now)
            else {
                continue;
            };
            // Worked out from the tallies, the cells carry no time on path.
            let timed = matches!(records, Cow::Borrowed(_));
            let mut oldest_open = None::<u32>;
            for probed in self.pairs.values_mut().filter(|p| p.spec.unit == *name) {
                probed.absorb(&records, &unit.sent, timed);
                changes.extend(probed.judge_closed(&unit.sent, entered, now, wall));
                let open = probed
                    .judged
                    .map_or(probed.first, |j| Some(j.wrapping_add(1)));
                if let Some(open) = open {
                    oldest_open = Some(oldest_open.map_or(open, |o: u32| o.min(open)));
                }
            }
            // A pair returning again after a loss has no time on path: its cells are read
            // next time rather than at the next full read.
            if self.pairs.values().any(|p| {
                p.spec.unit == *name
                    && p.returned_run > 0
                    && p.state.time_on_path_ns.contains(&None)
            }) {
                unit.full_read_at = None;
            }
            // Rounds every pair has judged are done with.
            let keep_from = oldest_open.unwrap_or(u32::MAX);
            unit.sent.retain(|&s| s >= keep_from);
            // A verdict may have made the open round decisive (it closes sooner), or ended
            // the wait for one (the interval again).
            let decisive = self
                .pairs
                .values()
                .any(|p| p.spec.unit == *name && p.decisive_next() && p.has_open(&unit.sent));
            if let Some(next) = unit.after_last(decisive) {
                unit.next_at = next;
            }
        }
        changes
    }

    /// A better reason for the change that said `was`, found outside the engine (a port
    /// is down); kept only while that change is still the pair's last.
    pub fn explain_change(&mut self, unit: &str, pair: &str, was: &str, reason: &str) {
        if let Some(probed) = self.pairs.get_mut(&(unit.to_string(), pair.to_string()))
            && probed.state.reason.as_deref() == Some(was)
        {
            probed.state.reason = Some(reason.to_string());
        }
    }

    pub fn pairs(&self) -> impl Iterator<Item = &PairState> {
        self.pairs.values().map(|p| &p.state)
    }

    /// (unit, pair) of every pair that is down.
    pub fn down_pairs(&self) -> BTreeSet<(String, String)> {
        self.pairs
            .iter()
            .filter(|(_, p)| p.state.status == PairStatus::Down)
            .map(|(key, _)| key.clone())
            .collect()
    }
}

impl UnitRounds {
    /// Whether a read now is the one a quiet unit makes when its round is due.
    fn read_when_due_pending(&self, now: Instant) -> bool {
        self.next_at <= now && !self.read_when_due
    }

    /// The number of its next round: above every round sent (`newest` anywhere), of the
    /// other parity than its own last.
    fn next_seq(&mut self, newest: u32) -> u32 {
        let mut seq = newest.wrapping_add(1).max(1);
        if self
            .last_seq
            .is_some_and(|last| parity(last) == parity(seq))
        {
            seq = seq.wrapping_add(1).max(1);
        }
        self.last_seq = Some(seq);
        seq
    }

    /// What its pairs' records are, as far as this read tells: read (every pair's cells),
    /// or worked out from the tallies when they say that every copy of the rounds this read
    /// closed came back. None when there is nothing to judge, or when the pairs' cells must
    /// be read first (then at once).
    fn records_to_judge<'r>(
        &mut self,
        records: &'r Records,
        entered: u32,
        pairs: &BTreeMap<(String, String), Probed>,
        name: &str,
        now: Instant,
    ) -> Option<Cow<'r, Records>> {
        let own: Vec<&Probed> = pairs.values().filter(|p| p.spec.unit == name).collect();
        let closed: Vec<u32> = (self.sent.iter().copied())
            .filter(|&seq| seq < entered && self.judged_below.is_none_or(|b| seq >= b))
            .collect();
        let copies_per_round = u32::try_from(own.len() * 2).unwrap_or(u32::MAX);
        // Taken in at every read: each keeps the last read of the tally that stood still.
        let all_returned = (records.tallies.get(&self.id)).is_some_and(|read| {
            (self.tallies).all_returned(entered, *read, &closed, copies_per_round)
        });
        let read_all = (own.iter()).all(|p| p.cells().all(|c| records.returns.contains_key(&c)));
        let judged = if read_all {
            self.full_read_at = Some(now + FULL_READ_EVERY);
            Cow::Borrowed(records)
        } else {
            let worked_out: Option<Vec<Vec<(u16, Returned)>>> = all_returned
                .then(|| own.iter().map(|p| p.all_returned(&closed)).collect())
                .flatten();
            let Some(cells) = worked_out else {
                if !closed.is_empty() {
                    self.full_read_at = None;
                    self.read_at = Some(now);
                }
                return None;
            };
            Cow::Owned(Records {
                returns: cells.into_iter().flatten().collect(),
                ..Records::default()
            })
        };
        self.judged_below = Some(entered);
        Some(judged)
    }

    /// When the round after the last is due: a step after the last was due, so that a
    /// late wake-up does not push every later round back (rounds drifted 1 to 2 ms each on
    /// a busy box), but never sooner than round-timeout (and the grace) after it was sent:
    /// a round has that long before the next one closes it.
    fn after_last(&self, decisive: bool) -> Option<Instant> {
        let (sent, due) = self.last_sent_at?;
        let least = (self.timing.round_timeout + DECISIVE_GRACE).min(self.timing.interval);
        Some((due + self.step(decisive)).max(sent + least))
    }

    /// Time to the next round: the interval, or round-timeout (and the grace) while a
    /// pair's next verdict would take it down.
    fn step(&self, decisive: bool) -> Duration {
        let timing = self.timing;
        if decisive {
            (timing.round_timeout + DECISIVE_GRACE).min(timing.interval)
        } else {
            timing.interval
        }
    }
}

impl Probed {
    fn new(spec: PairSpec, now: Instant) -> Probed {
        Probed {
            state: PairState {
                unit: spec.unit.clone(),
                pair: spec.pair.clone(),
                profile: spec.profile.clone(),
                ports: [spec.ports[0].0.clone(), spec.ports[1].0.clone()],
                status: PairStatus::Init,
                last_change: None,
                changes: 0,
                sent: [0; 2],
                lost: [0; 2],
                time_on_path_ns: [None; 2],
                rounds_lost: 0,
                lost_in_a_row: 0,
                reason: None,
            },
            starts_at: now + spec.timing.initial_delay,
            spec,
            first: None,
            judged: None,
            seen: [None; 2],
            returned: [BTreeSet::new(), BTreeSet::new()],
            lost_run: 0,
            returned_run: 0,
        }
    }

    /// Its two cells (LAN then WAN port).
    fn cells(&self) -> impl Iterator<Item = u16> + '_ {
        self.spec.ports.iter().map(|(_, port)| cell(*port))
    }

    /// Its cells as the chip holds them once every copy of `rounds` came back: each
    /// counted, in order, those it had not counted yet. None before its first read.
    fn all_returned(&self, rounds: &[u32]) -> Option<Vec<(u16, Returned)>> {
        let mut cells = Vec::with_capacity(2);
        for (seen, c) in self.seen.iter().zip(self.cells()) {
            let before = (*seen)?;
            let newer = rounds.iter().filter(|&&seq| seq > before.newest);
            let count = u32::try_from(newer.clone().count()).unwrap_or(u32::MAX);
            let returned = Returned {
                newest: newer.max().copied().unwrap_or(before.newest),
                count: before.count.wrapping_add(count),
                ..before
            };
            cells.push((c, returned));
        }
        Some(cells)
    }

    /// Up, with nothing lost since, and no verdict near: its unit's reads can wait for
    /// the unit's next round. A first loss is then judged an interval late, which the
    /// rounds after it make up for only when it takes 3 or more to go down.
    fn is_quiet(&self) -> bool {
        self.state.status == PairStatus::Up
            && self.lost_run == 0
            && self.spec.timing.down_count >= 3
            && !self.decisive_next()
    }

    /// Whether the next verdict, if a loss, takes the pair down.
    fn decisive_next(&self) -> bool {
        self.lost_run + 1 >= u32::from(self.spec.timing.down_count)
            && self.state.status != PairStatus::Down
    }

    /// How many of `rounds` are this pair's and not judged yet.
    fn open_rounds(&self, rounds: &[u32]) -> u64 {
        let Some(first) = self.first else {
            return 0;
        };
        let open = rounds
            .iter()
            .filter(|&&seq| seq >= first && self.judged.is_none_or(|j| seq > j));
        open.count() as u64
    }

    fn has_open(&self, rounds: &[u32]) -> bool {
        self.open_rounds(rounds) > 0
    }

    /// Takes in the chip's record of each direction: the newest round counted is one, and
    /// the count's difference since the last read says how many of this pair's rounds
    /// before it were counted too (the newest of them: the chip counts in order, each once;
    /// with a read after every round there are none). The count and the newest round are
    /// two registers, read one after the other while returns come in: the reader reads the
    /// count on both sides of the newest and reads again when they differ (a count behind
    /// its newest would lose a returned round when a read covers two), and the newest
    /// round is believed over the count.
    fn absorb(&mut self, records: &Records, rounds: &[u32], timed: bool) {
        for direction in Direction::BOTH {
            let d = direction.index();
            let port = self.spec.ports[d].1;
            let Some(now) = records.returns.get(&cell(port)).copied() else {
                continue;
            };
            let Some(first) = self.first else {
                self.seen[d] = Some(now);
                continue;
            };
            let (after, counted) = match self.seen[d] {
                Some(before) => (before.newest, now.count.wrapping_sub(before.count)),
                // The first read: only the newest is known to be this run's.
                None => (first.wrapping_sub(1), 0),
            };
            let newest_is_new = now.newest > after && now.newest >= first;
            if newest_is_new {
                self.returned[d].insert(now.newest);
                if timed {
                    self.state.time_on_path_ns[d] = Some(u64::from(now.path_ns));
                }
            }
            let older = counted.saturating_sub(u32::from(newest_is_new));
            let candidates = rounds
                .iter()
                .rev()
                .filter(|&&seq| seq > after && seq < now.newest && seq >= first);
            self.returned[d].extend(candidates.take(older as usize));
            self.seen[d] = Some(now);
        }
    }

    /// Judges, oldest first, this pair's rounds that a later round entering the chip has
    /// closed (`entered`: the unit's newest round the chip has seen).
    fn judge_closed(
        &mut self,
        rounds: &[u32],
        entered: u32,
        now: Instant,
        wall: SystemTime,
    ) -> Vec<Change> {
        let Some(first) = self.first else {
            return Vec::new();
        };
        let open: Vec<u32> = rounds
            .iter()
            .copied()
            .filter(|&seq| seq >= first && self.judged.is_none_or(|j| seq > j) && seq < entered)
            .collect();
        let mut changes = Vec::new();
        for seq in open {
            let returned = Direction::BOTH.map(|d| self.returned[d.index()].remove(&seq));
            changes.extend(self.judge(returned, now, wall));
            self.judged = Some(seq);
        }
        changes
    }

    /// The verdict on one round, and the status change it makes, if any.
    fn judge(&mut self, returned: [bool; 2], now: Instant, wall: SystemTime) -> Option<Change> {
        let timing = self.spec.timing;
        if returned == [true, true] {
            self.returned_run += 1;
            self.lost_run = 0;
            self.state.lost_in_a_row = 0;
            let enough = self.returned_run >= u32::from(timing.up_count);
            (enough && self.state.status != PairStatus::Up).then(|| {
                let reason = format!("{} consecutive keep-alives returned", self.returned_run);
                self.set_status(PairStatus::Up, reason, now, wall)
            })
        } else {
            let mut missing = Vec::new();
            self.state.rounds_lost += 1;
            for direction in Direction::BOTH {
                if !returned[direction.index()] {
                    self.state.lost[direction.index()] += 1;
                    self.state.time_on_path_ns[direction.index()] = None;
                    missing.push(format!("out of {}", self.spec.ports[direction.index()].0));
                }
            }
            self.lost_run += 1;
            self.state.lost_in_a_row = self.lost_run;
            self.returned_run = 0;
            let enough = self.lost_run >= u32::from(timing.down_count);
            (enough && self.state.status != PairStatus::Down).then(|| {
                let reason = format!(
                    "{} consecutive keep-alives lost (last: {})",
                    self.lost_run,
                    missing.join(" and ")
                );
                self.set_status(PairStatus::Down, reason, now, wall)
            })
        }
    }

    fn set_status(
        &mut self,
        new: PairStatus,
        reason: String,
        now: Instant,
        wall: SystemTime,
    ) -> Change {
        let old = std::mem::replace(&mut self.state.status, new);
        self.state.last_change = Some(wall);
        self.state.changes += 1;
        self.state.reason = Some(reason.clone());
        Change {
            unit: self.spec.unit.clone(),
            pair: self.spec.pair.clone(),
            old,
            new,
            reason,
            at: now,
            ports: self.spec.ports.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Tally;

    const MS: Duration = Duration::from_millis(1);

    fn spec(pair: &str, id: u8) -> PairSpec {
        PairSpec {
            unit: "ef1".into(),
            pair: pair.into(),
            profile: "fast".into(),
            unit_id: 1,
            id,
            ports: [
                (format!("{pair}-lan"), u32::from(id) * 2),
                (format!("{pair}-wan"), u32::from(id) * 2 + 1),
            ],
            timing: Timing {
                initial_delay: 50 * MS,
                interval: 10 * MS,
                round_timeout: 4 * MS,
                down_count: 3,
                up_count: 2,
            },
        }
    }

    /// The chip as p4/efb.p4 records rounds: a copy counts once, in order, and only while
    /// its round is its unit's newest.
    #[derive(Default)]
    struct Chip {
        rounds: BTreeMap<u8, u32>,
        tallies: BTreeMap<u8, [Tally; 2]>,
        returns: BTreeMap<u16, Returned>,
        /// Reads that asked for pairs' cells.
        reads_of_cells: std::cell::Cell<usize>,
        /// When [`run`] read.
        read_times: Vec<Instant>,
    }

    impl Chip {
        /// A round enters, copied to both ports of `pairs` pairs.
        fn enter(&mut self, round: &Round, pairs: u32) {
            self.rounds.insert(round.unit_id, round.seq);
            self.tally(round.unit_id, round.seq).copies += 2 * pairs;
        }

        fn tally(&mut self, unit: u8, seq: u32) -> &mut Tally {
            &mut self.tallies.entry(unit).or_default()[parity(seq)]
        }

        fn back(&mut self, unit: u8, pair: u8, direction: Direction, seq: u32) {
            if self.rounds.get(&unit) != Some(&seq) {
                return;
            }
            // The test pairs' ports: pair id x 2 (LAN) and + 1 (WAN), as `spec` cables them.
            let port = u32::from(pair) * 2 + direction as u32;
            let r = self.returns.entry(cell(port)).or_default();
            if seq > r.newest {
                *r = Returned {
                    newest: seq,
                    count: r.count.wrapping_add(1),
                    path_ns: 25_000,
                    arrival: 0,
                };
                self.tally(unit, seq).counted += 1;
            }
        }

        fn records(&self, wanted: &Wanted) -> Records {
            if !wanted.cells.is_empty() {
                self.reads_of_cells.set(self.reads_of_cells.get() + 1);
            }
            Records {
                rounds: (wanted.units.iter())
                    .map(|u| (*u, self.rounds.get(u).copied().unwrap_or(0)))
                    .collect(),
                tallies: (wanted.units.iter())
                    .map(|u| (*u, self.tallies.get(u).copied().unwrap_or_default()))
                    .collect(),
                returns: (wanted.cells.iter())
                    .map(|c| (*c, self.returns.get(c).copied().unwrap_or_default()))
                    .collect(),
            }
        }
    }

    /// The read efbd makes before a pair's first round: where its counts start.
    fn read_baseline(engine: &mut Engine, chip: &Chip, now: Instant) {
        assert!(engine.tick(now).is_empty(), "no round before the baseline");
        let wanted = engine.wanted(now).expect("the baseline is read");
        assert!(
            engine
                .recorded(&chip.records(&wanted), now, SystemTime::UNIX_EPOCH)
                .is_empty()
        );
    }

    /// Reads what is due at `now` as efbd does: at once again while the engine wants
    /// more (the pairs' cells, when the tallies could not tell).
    fn read_due(engine: &mut Engine, chip: &Chip, now: Instant) -> Vec<Change> {
        let mut changes = Vec::new();
        for _ in 0..3 {
            let Some(wanted) = engine.wanted(now) else {
                break;
            };
            changes.extend(engine.recorded(&chip.records(&wanted), now, SystemTime::UNIX_EPOCH));
        }
        changes
    }

    /// Runs the engine against the chip until `end`, as efbd does: sends what is due,
    /// reads what it wants. Each round enters the chip as it is sent and its copies come
    /// back at once where `filter(round number, pair id, direction)` says so (round
    /// number: 10 ms slots from `start`). Returns the changes with the slot they came in
    /// and the times rounds were sent.
    fn run(
        engine: &mut Engine,
        chip: &mut Chip,
        start: Instant,
        end: Instant,
        pairs: &[u8],
        filter: impl Fn(u32, u8, Direction) -> bool,
    ) -> (Vec<(u32, Change)>, Vec<Instant>) {
        let mut changes = Vec::new();
        let mut sent = Vec::new();
        let slot = |now: Instant| ((now - start).as_millis() / 10) as u32;
        while let Some(now) = engine.next_due().filter(|at| *at < end) {
            for round in engine.tick(now) {
                sent.push(now);
                chip.enter(&round, pairs.len() as u32);
                for &pair in pairs {
                    for direction in Direction::BOTH {
                        if filter(slot(now), pair, direction) {
                            chip.back(round.unit_id, pair, direction, round.seq);
                        }
                    }
                }
            }
            if let Some(wanted) = engine.wanted(now) {
                chip.read_times.push(now);
                let found = engine.recorded(&chip.records(&wanted), now, SystemTime::UNIX_EPOCH);
                changes.extend(found.into_iter().map(|c| (slot(now), c)));
            }
        }
        (changes, sent)
    }

    #[test]
    fn one_round_a_unit_and_nothing_before_the_initial_delay() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1), spec("b", 2)], start);
        assert_eq!(engine.next_due(), Some(start + 50 * MS));
        assert!(engine.tick(start + 49 * MS).is_empty());
        assert!(engine.tick(start + 50 * MS).is_empty());
        let baseline = engine.wanted(start + 50 * MS).unwrap();
        assert_eq!(
            (baseline.units, baseline.cells),
            (vec![1], vec![2, 3, 4, 5]),
            "before the first round, both directions of both pairs"
        );
        read_baseline(&mut engine, &Chip::default(), start + 50 * MS);
        let rounds = engine.tick(start + 50 * MS);
        assert_eq!(rounds.len(), 1, "one packet-out for the unit's two pairs");
        let ka = KeepAlive::decode(&rounds[0].frame).unwrap();
        assert_eq!((ka.unit_id, ka.seq), (1, rounds[0].seq));
        let wanted = engine.wanted(start + 51 * MS).unwrap();
        assert_eq!(wanted.units, vec![1]);
        assert!(wanted.cells.is_empty(), "then the unit's tallies");
    }

    #[test]
    fn the_tallies_spare_reading_the_pairs_until_a_copy_is_missing() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        let pairs: Vec<PairSpec> = (1..=20).map(|id| spec(&format!("p{id}"), id)).collect();
        let ids: Vec<u8> = (1..=20).collect();
        engine.sync(pairs, start);
        // Two seconds healthy: 195 rounds, every pair's cells read 3 times (the baseline,
        // after the first returns for their time on path, and a second later).
        let healthy = start + 2_000 * MS;
        let (changes, sent) = run(&mut engine, &mut chip, start, healthy, &ids, |_, _, _| true);
        assert_eq!(sent.len(), 195);
        assert_eq!(changes.len(), 20, "all up: {changes:?}");
        assert_eq!(chip.reads_of_cells.get(), 3);
        assert!(
            engine
                .pairs()
                .all(|p| p.time_on_path_ns == [Some(25_000); 2]),
            "the time on path read, never worked out"
        );
        // Every pair up and nothing lost, the unit is read when its round is due, before
        // sending it: no read of its own between rounds.
        let last_second = |at: &&Instant| **at >= start + 1_000 * MS;
        let reads: Vec<&Instant> = chip.read_times.iter().filter(last_second).collect();
        let rounds: Vec<&Instant> = sent.iter().filter(last_second).collect();
        assert_eq!(reads, rounds);
        // Then pair 7's WAN side dies: its rounds have a copy missing, the pairs are read.
        let dead = healthy + 100 * MS;
        let (changes, _) = run(&mut engine, &mut chip, healthy, dead, &ids, |_, id, d| {
            !(id == 7 && d == Direction::OutOfWan)
        });
        assert_eq!(changes.len(), 1);
        assert_eq!(
            (changes[0].1.pair.as_str(), changes[0].1.new),
            ("p7", PairStatus::Down)
        );
        let lost: BTreeMap<&str, u64> = (engine.pairs())
            .map(|p| (p.pair.as_str(), p.rounds_lost))
            .collect();
        assert!(lost["p7"] >= 9, "{lost:?}");
        assert!(
            lost.iter().all(|(pair, n)| *pair == "p7" || *n == 0),
            "only p7 lost rounds: {lost:?}"
        );
        // The rounds with a copy missing had the pairs' cells read (a read judges the
        // rounds closed since the one before: one, or two after a quiet unit's).
        let reads = chip.reads_of_cells.get() - 3;
        assert!(
            reads >= lost["p7"] as usize / 2,
            "{reads} reads of cells, {lost:?}"
        );
    }

    #[test]
    fn a_pair_goes_down_after_exactly_down_count_lost_rounds_and_comes_back() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1), spec("b", 2)], start);
        // Pair 1's LAN-bound copies are lost in the slots 10..20.
        let dead = |slot: u32| (10..20).contains(&slot);
        let (changes, sent) = run(
            &mut engine,
            &mut chip,
            start,
            start + 300 * MS,
            &[1, 2],
            |slot, id, d| !(id == 1 && dead(slot) && d == Direction::OutOfLan),
        );
        let seen: Vec<(&str, PairStatus)> = changes
            .iter()
            .map(|(_, c)| (c.pair.as_str(), c.new))
            .collect();
        assert_eq!(
            seen,
            vec![
                ("a", PairStatus::Up),
                ("b", PairStatus::Up),
                ("a", PairStatus::Down),
                ("a", PairStatus::Up),
            ]
        );
        let down = &changes[2].1;
        assert_eq!(
            down.reason,
            "3 consecutive keep-alives lost (last: out of a-lan)"
        );
        // The rounds sent in the dead slots (one sooner, to close the decisive one).
        let in_dead_slots = (sent.iter())
            .filter(|at| dead(((**at - start).as_millis() / 10) as u32))
            .count() as u64;
        assert_eq!(in_dead_slots, 11);
        let a = engine.pairs().find(|p| p.pair == "a").unwrap();
        assert_eq!(a.lost, [in_dead_slots, 0], "each lost one copy");
        assert_eq!(a.rounds_lost, in_dead_slots);
        assert_eq!(a.changes, 3);
        assert_eq!(a.time_on_path_ns, [Some(25_000), Some(25_000)]);
        let b = engine.pairs().find(|p| p.pair == "b").unwrap();
        assert_eq!(
            b.rounds_lost, 0,
            "the healthy pair of the unit lost nothing"
        );
    }

    #[test]
    fn the_decisive_round_is_closed_round_timeout_after_it_was_sent() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        // Dead from the slot 10 on: rounds at 100, 110 lost; the one at 120 is decisive.
        let dead = |slot: u32, _, _| slot < 10;
        let (changes, sent) = run(&mut engine, &mut chip, start, start + 128 * MS, &[1], dead);
        let down: Vec<&Change> = changes
            .iter()
            .map(|(_, c)| c)
            .filter(|c| c.new == PairStatus::Down)
            .collect();
        assert_eq!(down.len(), 1);
        let decisive = start + 120 * MS;
        assert!(sent.contains(&decisive), "{sent:?}");
        let closing = decisive + 4 * MS + DECISIVE_GRACE;
        assert!(
            sent.contains(&closing),
            "the next round closes it: {sent:?}"
        );
        assert_eq!(
            down[0].at,
            closing + READ_AFTER,
            "judged at the read after it"
        );
        let a = engine.pairs().next().unwrap();
        assert_eq!((a.rounds_lost, a.lost_in_a_row), (3, 3));
        assert_eq!(a.time_on_path_ns, [None, None], "lost: no time on path");
        // Down: the rounds keep the interval again.
        let (_, later) = run(&mut engine, &mut chip, start, start + 150 * MS, &[1], dead);
        assert_eq!(later.first(), Some(&(closing + 10 * MS)), "{later:?}");
    }

    #[test]
    fn a_quiet_unit_finds_a_death_as_soon_as_one_read_after_each_round() {
        // A quiet unit judges a first loss an interval late; from 3 lost rounds in a row on
        // the rounds after it make up for that, with 2 they could not: read after each.
        for down_count in [2, 3, 4] {
            let mut engine = Engine::new();
            let mut chip = Chip::default();
            let start = Instant::now();
            let mut one = spec("a", 1);
            one.timing.down_count = down_count;
            engine.sync(vec![one], start);
            // Dead from the slot 10 on: the round at 100 is the first lost.
            let dead = |slot: u32, _, _| slot < 10;
            let (changes, _) = run(&mut engine, &mut chip, start, start + 200 * MS, &[1], dead);
            let down = changes.iter().find(|(_, c)| c.new == PairStatus::Down);
            let decisive = start + (100 + 10 * (u32::from(down_count) - 1)) * MS;
            let closing = decisive + 4 * MS + DECISIVE_GRACE;
            assert_eq!(
                down.map(|(_, c)| c.at),
                Some(closing + READ_AFTER),
                "down after {down_count}"
            );
        }
    }

    #[test]
    fn a_round_the_chip_has_not_seen_is_not_judged_and_is_read_again() {
        let mut engine = Engine::new();
        let chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        let mut now = start + 50 * MS;
        read_baseline(&mut engine, &chip, now);
        for _ in 0..10 {
            let rounds = engine.tick(now);
            assert_eq!(rounds.len(), 1);
            // The rounds never reach the chip (nothing enters): reads find nothing new.
            let wanted = engine.wanted(now + READ_AFTER).unwrap();
            let changes = engine.recorded(
                &chip.records(&wanted),
                now + READ_AFTER,
                SystemTime::UNIX_EPOCH,
            );
            assert!(changes.is_empty());
            assert_eq!(engine.next_due(), Some(now + 2 * READ_AFTER), "read again");
            now += 10 * MS;
        }
        let a = engine.pairs().next().unwrap();
        assert_eq!((a.status, a.rounds_lost), (PairStatus::Init, 0));
        // Without an answer, the read waits as it is told.
        let wanted = engine.wanted(now).unwrap();
        engine.unread(&wanted, now + 100 * MS);
        assert!(engine.wanted(now).is_none());
        assert_eq!(engine.next_due(), Some(now), "the round due now");
    }

    #[test]
    fn a_late_read_loses_no_round() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        // Five rounds sent and returned, read only after the fifth (efbd was busy).
        let mut now = start + 50 * MS;
        read_baseline(&mut engine, &chip, now);
        for _ in 0..5 {
            for round in engine.tick(now) {
                chip.enter(&round, 1);
                for d in Direction::BOTH {
                    chip.back(1, 1, d, round.seq);
                }
            }
            now += 10 * MS;
        }
        let changes = read_due(&mut engine, &chip, now);
        assert_eq!(
            chip.reads_of_cells.get(),
            2,
            "the baseline, then the tallies could not tell"
        );
        let a = engine.pairs().next().unwrap();
        assert_eq!(a.rounds_lost, 0);
        assert_eq!(changes.len(), 1, "up after four closed rounds: {changes:?}");
        assert_eq!(changes[0].new, PairStatus::Up);
    }

    #[test]
    fn a_copy_back_after_the_next_round_entered_is_lost() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        let mut one = spec("a", 1);
        one.timing.down_count = 1;
        engine.sync(vec![one], start);
        read_baseline(&mut engine, &chip, start + 50 * MS);
        let first = engine.tick(start + 50 * MS).remove(0);
        chip.enter(&first, 1);
        chip.back(1, 1, Direction::OutOfLan, first.seq);
        let second = engine.tick(start + 55 * MS).remove(0);
        chip.enter(&second, 1);
        // The WAN-bound copy of the first round comes back now: too late, not counted.
        chip.back(1, 1, Direction::OutOfWan, first.seq);
        let changes = read_due(&mut engine, &chip, start + 56 * MS);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].new, PairStatus::Down);
        assert_eq!(engine.pairs().next().unwrap().lost, [0, 1]);
    }

    #[test]
    fn a_read_torn_between_the_count_and_the_newest_round_loses_nothing() {
        for torn in [Torn::CountBehind, Torn::NewestBehind] {
            let mut engine = Engine::new();
            let mut chip = Chip::default();
            let start = Instant::now();
            let mut one = spec("a", 1);
            one.timing.down_count = 1;
            engine.sync(vec![one], start);
            read_baseline(&mut engine, &chip, start + 50 * MS);
            let mut now = start + 50 * MS;
            for _ in 0..4 {
                let round = engine.tick(now).remove(0);
                chip.enter(&round, 1);
                for d in Direction::BOTH {
                    chip.back(1, 1, d, round.seq);
                }
                while let Some(wanted) = engine.wanted(now + READ_AFTER) {
                    // Every read is of the pair's cells, and the return came in between
                    // the reads of its two registers.
                    let cells = vec![cell(2), cell(3)];
                    let mut records = chip.records(&Wanted { cells, ..wanted });
                    for returned in records.returns.values_mut() {
                        match torn {
                            Torn::CountBehind => returned.count -= 1,
                            Torn::NewestBehind => returned.newest = round.seq - 1,
                        }
                    }
                    engine.recorded(&records, now + READ_AFTER, SystemTime::UNIX_EPOCH);
                }
                now += 5 * MS;
            }
            let a = engine.pairs().next().unwrap();
            assert_eq!(a.rounds_lost, 0, "{torn:?}: {a:?}");
            assert_eq!(a.status, PairStatus::Up, "{torn:?}");
        }
    }

    #[derive(Debug, Clone, Copy)]
    enum Torn {
        CountBehind,
        NewestBehind,
    }

    #[test]
    fn a_round_that_could_not_be_sent_is_not_a_loss() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        read_baseline(&mut engine, &Chip::default(), start + 50 * MS);
        for slot in 5..20 {
            for round in engine.tick(start + slot * 10 * MS) {
                engine.not_sent(&round.unit, round.seq);
            }
        }
        let a = engine.pairs().next().unwrap();
        assert_eq!(
            (a.status, a.lost, a.sent),
            (PairStatus::Init, [0, 0], [0, 0])
        );
    }

    #[test]
    fn changed_ports_start_over_and_a_new_profile_keeps_the_status() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        run(
            &mut engine,
            &mut chip,
            start,
            start + 100 * MS,
            &[1],
            |_, _, _| true,
        );
        let now = start + 100 * MS;
        let mut slower = spec("a", 1);
        slower.timing.interval = 20 * MS;
        engine.sync(vec![slower], now);
        assert_eq!(engine.pairs().next().unwrap().status, PairStatus::Up);
        let mut moved = spec("a", 1);
        moved.ports[1].1 = 40;
        engine.sync(vec![moved], now);
        assert_eq!(engine.pairs().next().unwrap().status, PairStatus::Init);
        engine.sync(Vec::new(), now);
        assert_eq!(engine.pairs().count(), 0);
        assert_eq!(engine.next_due(), None, "no unit left to probe");
    }

    #[test]
    fn down_pairs_lists_what_is_down() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1), spec("b", 2)], start);
        run(
            &mut engine,
            &mut chip,
            start,
            start + 120 * MS,
            &[1, 2],
            |_, id, _| id != 2,
        );
        assert_eq!(
            engine.down_pairs(),
            BTreeSet::from([("ef1".to_string(), "b".to_string())])
        );
    }

    #[test]
    fn a_late_wake_up_does_not_push_later_rounds_back() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        read_baseline(&mut engine, &Chip::default(), start + 50 * MS);
        assert_eq!(engine.tick(start + 50 * MS).len(), 1);
        assert!(engine.tick(start + 60 * MS - MS / 2).is_empty());
        // Sent 3 ms late: the next is still due on the interval's grid.
        assert_eq!(engine.tick(start + 63 * MS).len(), 1);
        assert!(engine.tick(start + 70 * MS - MS / 2).is_empty());
        assert_eq!(engine.tick(start + 70 * MS).len(), 1);
        // 9 ms late: the next one still gets round-timeout and the grace (4 + 1 ms).
        assert_eq!(engine.tick(start + 89 * MS).len(), 1);
        assert!(engine.tick(start + 94 * MS - MS / 2).is_empty());
        assert_eq!(engine.tick(start + 94 * MS).len(), 1);
    }

    #[test]
    fn rounds_are_numbered_above_what_the_chip_holds() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.reconnected(41);
        engine.sync(vec![spec("a", 1)], start);
        read_baseline(&mut engine, &Chip::default(), start + 50 * MS);
        assert_eq!(engine.tick(start + 50 * MS)[0].seq, 42);
    }

    #[test]
    fn rounds_in_flight_when_the_chip_restarts_count_neither_way() {
        let mut engine = Engine::new();
        let mut chip = Chip::default();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        run(
            &mut engine,
            &mut chip,
            start,
            start + 100 * MS,
            &[1],
            |_, _, _| true,
        );
        let before = engine.pairs().next().unwrap().clone();
        // The chip restarts empty with a round in flight; efbd reconnects.
        let mut chip = Chip::default();
        engine.reconnected(0);
        let after = engine.pairs().next().unwrap();
        assert!(
            (before.sent[0] - 2..before.sent[0]).contains(&after.sent[0]),
            "the rounds in flight (one, or two of a quiet unit) uncounted: {after:?}"
        );
        run(
            &mut engine,
            &mut chip,
            start,
            start + 200 * MS,
            &[1],
            |_, _, _| true,
        );
        let a = engine.pairs().next().unwrap();
        assert_eq!((a.status, a.rounds_lost), (PairStatus::Up, 0));
        assert!(a.sent[0] > before.sent[0], "counting again");
    }
}
