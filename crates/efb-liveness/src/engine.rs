//! The liveness state machine. Every `interval` each probed pair gets one round: a keep-alive
//! out of each of its two ports. A round is judged when the next one starts: both came back,
//! or it is lost. `probes-down-count` lost rounds in a row take the pair down,
//! `probes-up-count` returned rounds in a row bring it up. The round whose loss would take the
//! pair down is judged sooner, `round-timeout` after it was sent (judging it at the next round
//! made a dead filter wait up to one more interval); the others keep the whole interval, since
//! their verdict changes only the counts (at 5 ms, on two busy cores, a rebalance's writes held
//! healthy pairs' round trips past the timeout about once in 100 000 rounds). A new pair is
//! `init` (and takes traffic) until its first verdict; probing starts `initial-delay` after the
//! pair starts being probed (efbd starting, the pair or its profile configured, its ports
//! changed).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant, SystemTime};

use efb_model::Profile;

use crate::keepalive::{Direction, KeepAlive};

/// The chip's timestamps are 48 bits wide: differences are taken modulo 2^48.
const CLOCK_MASK: u64 = (1 << 48) - 1;

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
    /// The chip's pair id (carried in the keep-alive).
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
    /// Time on path of the last round's keep-alive, by [`Direction`] it left in; none when
    /// that keep-alive did not come back (a dead pair has no time on path).
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

/// A keep-alive to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub unit: String,
    pub pair: String,
    /// The chip's pair id and the round's sequence number, as the frame carries them.
    pub pair_id: u8,
    pub seq: u32,
    pub device_port: u32,
    pub frame: Vec<u8>,
}

#[derive(Clone, Copy, Debug)]
struct Round {
    seq: u32,
    returned: [bool; 2],
    /// When it is judged if its loss would take the pair down.
    due: Instant,
}

#[derive(Clone, Debug)]
struct Probed {
    spec: PairSpec,
    state: PairState,
    next_at: Instant,
    round: Option<Round>,
    lost_run: u32,
    returned_run: u32,
}

/// Every probed pair.
#[derive(Debug, Default)]
pub struct Engine {
    pairs: BTreeMap<(String, String), Probed>,
    by_id: HashMap<u8, (String, String)>,
    seq: u32,
}

impl Engine {
    pub fn new() -> Engine {
        Engine::default()
    }

    /// Probes exactly `specs` from now on. A new pair, or one whose ports or id changed,
    /// starts over in `init` and is first probed after its initial delay; a pair whose
    /// profile timing changed keeps its status; pairs not in `specs` are forgotten.
    pub fn sync(&mut self, specs: Vec<PairSpec>, now: Instant) {
        let mut next = BTreeMap::new();
        for spec in specs {
            let key = (spec.unit.clone(), spec.pair.clone());
            let kept = self
                .pairs
                .remove(&key)
                .filter(|old| old.spec.id == spec.id && old.spec.ports == spec.ports);
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
        self.by_id = next
            .iter()
            .map(|(key, p)| (p.spec.id, key.clone()))
            .collect();
        self.pairs = next;
    }

    /// When [`Engine::tick`] has something to do next: a round to judge or one to send.
    pub fn next_due(&self) -> Option<Instant> {
        self.pairs.values().map(Probed::next_due).min()
    }

    /// Judges the rounds whose time is up and starts the next ones.
    pub fn tick(&mut self, now: Instant, wall: SystemTime) -> (Vec<Probe>, Vec<Change>) {
        let mut probes = Vec::new();
        let mut changes = Vec::new();
        for probed in self.pairs.values_mut() {
            let judged =
                probed.early_judgement().is_some_and(|due| due <= now) || probed.next_at <= now;
            if judged && let Some(change) = probed.judge(now, wall) {
                changes.push(change);
            }
            if probed.next_at > now {
                continue;
            }
            self.seq = self.seq.wrapping_add(1);
            probes.extend(probed.start_round(self.seq, now));
            let interval = probed.spec.timing.interval;
            probed.next_at += interval;
            if probed.next_at <= now {
                // Fell behind (a busy machine): skip rounds rather than send a burst.
                probed.next_at = now + interval;
            }
        }
        (probes, changes)
    }

    /// The round just started for this pair could not be sent (the chip is away): it
    /// counts neither way.
    pub fn not_sent(&mut self, unit: &str, pair: &str) {
        if let Some(probed) = self.pairs.get_mut(&(unit.to_string(), pair.to_string()))
            && probed.round.take().is_some()
        {
            for count in &mut probed.state.sent {
                *count = count.saturating_sub(1);
            }
        }
    }

    /// A frame came back from the chip at `rx_ns` (its clock). Returns whether it was a
    /// keep-alive of the current round of a probed pair.
    pub fn received(&mut self, frame: &[u8], rx_ns: u64) -> bool {
        let Ok(ka) = KeepAlive::decode(frame) else {
            return false;
        };
        let Some(key) = self.by_id.get(&ka.pair_id) else {
            return false;
        };
        let Some(probed) = self.pairs.get_mut(key) else {
            return false;
        };
        let Some(round) = probed.round.as_mut().filter(|r| r.seq == ka.seq) else {
            return false;
        };
        let d = ka.direction.index();
        if round.returned[d] {
            return false;
        }
        round.returned[d] = true;
        probed.state.time_on_path_ns[d] = Some(rx_ns.wrapping_sub(ka.tx_ns) & CLOCK_MASK);
        true
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
            next_at: now + spec.timing.initial_delay,
            spec,
            round: None,
            lost_run: 0,
            returned_run: 0,
        }
    }

    fn next_due(&self) -> Instant {
        match self.early_judgement() {
            Some(due) => due.min(self.next_at),
            None => self.next_at,
        }
    }

    /// When the round in flight is judged before the next one starts: when its loss would
    /// take the pair down (see the module's words).
    fn early_judgement(&self) -> Option<Instant> {
        let round = self.round.as_ref()?;
        let decisive = self.lost_run + 1 >= u32::from(self.spec.timing.down_count)
            && self.state.status != PairStatus::Down;
        decisive.then_some(round.due)
    }

    fn start_round(&mut self, seq: u32, now: Instant) -> Vec<Probe> {
        self.round = Some(Round {
            seq,
            returned: [false; 2],
            due: now + self.spec.timing.round_timeout,
        });
        Direction::BOTH
            .iter()
            .map(|&direction| {
                self.state.sent[direction.index()] += 1;
                Probe {
                    unit: self.spec.unit.clone(),
                    pair: self.spec.pair.clone(),
                    pair_id: self.spec.id,
                    seq,
                    device_port: self.spec.ports[direction.index()].1,
                    frame: KeepAlive {
                        pair_id: self.spec.id,
                        direction,
                        seq,
                        tx_ns: 0,
                    }
                    .encode(),
                }
            })
            .collect()
    }

    /// The verdict on the round in flight, and the status change it makes, if any.
    fn judge(&mut self, now: Instant, wall: SystemTime) -> Option<Change> {
        let round = self.round.take()?;
        let timing = self.spec.timing;
        if round.returned == [true, true] {
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
                if !round.returned[direction.index()] {
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

    const MS: Duration = Duration::from_millis(1);

    fn spec(pair: &str, id: u8) -> PairSpec {
        PairSpec {
            unit: "ef1".into(),
            pair: pair.into(),
            profile: "fast".into(),
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

    /// Runs rounds every 10 ms from `start`, each judged 4 ms after it was sent: `filter`
    /// says whether a probe of (pair id, direction) comes back in that round; returns the
    /// changes with the round they came in.
    fn run(
        engine: &mut Engine,
        start: Instant,
        rounds: std::ops::Range<u32>,
        filter: impl Fn(u32, u8, Direction) -> bool,
    ) -> Vec<(u32, Change)> {
        let mut out = Vec::new();
        for round in rounds {
            let now = start + round * 10 * MS;
            let (probes, changes) = engine.tick(now, SystemTime::UNIX_EPOCH);
            out.extend(changes.into_iter().map(|c| (round, c)));
            for probe in probes {
                let ka = KeepAlive::decode(&probe.frame).unwrap();
                if filter(round, ka.pair_id, ka.direction) {
                    let mut back = probe.frame.clone();
                    back[20..28].copy_from_slice(&1_000u64.to_be_bytes());
                    assert!(engine.received(&back, 26_000));
                }
            }
            let (probes, changes) = engine.tick(now + 4 * MS, SystemTime::UNIX_EPOCH);
            assert!(probes.is_empty(), "nothing sent between rounds");
            out.extend(changes.into_iter().map(|c| (round, c)));
        }
        out
    }

    #[test]
    fn a_dead_pair_counts_lost_rounds_shows_no_time_on_path_and_says_why() {
        let mut engine = Engine::new();
        let start = Instant::now() - 50 * MS;
        engine.sync(vec![spec("a", 1)], start);
        // Returned until round 10, then only the LAN-bound keep-alive comes back.
        run(&mut engine, start, 5..16, |round, _, d| {
            round < 10 || d == Direction::OutOfWan
        });
        let pair = engine.pairs().next().unwrap();
        assert_eq!(pair.status, PairStatus::Down);
        // Rounds 10..=14 judged lost (12, the third, at once; 15 is still in flight): five
        // rounds, five keep-alives (one a round).
        assert_eq!((pair.rounds_lost, pair.probes_lost()), (5, 5));
        assert_eq!(pair.lost_in_a_row, 5);
        let out_of_lan = Direction::OutOfLan.index();
        assert_eq!(
            pair.time_on_path_ns[out_of_lan], None,
            "lost: no time on path"
        );
        assert!(pair.time_on_path_ns[1 - out_of_lan].is_some());
        let reason = pair.reason.as_deref().unwrap();
        assert!(
            reason.contains("3 consecutive keep-alives lost"),
            "{reason}"
        );
        assert!(reason.contains("out of a-lan"), "{reason}");
    }

    #[test]
    fn nothing_is_sent_before_the_initial_delay() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        assert_eq!(engine.next_due(), Some(start + 50 * MS));
        let (probes, _) = engine.tick(start + 49 * MS, SystemTime::UNIX_EPOCH);
        assert!(probes.is_empty());
        let (probes, _) = engine.tick(start + 50 * MS, SystemTime::UNIX_EPOCH);
        let ports: Vec<u32> = probes.iter().map(|p| p.device_port).collect();
        assert_eq!(ports, vec![2, 3], "one out of each port");
    }

    #[test]
    fn a_pair_goes_down_after_exactly_down_count_lost_rounds_and_comes_back() {
        let mut engine = Engine::new();
        let start = Instant::now() - 50 * MS;
        engine.sync(vec![spec("a", 1), spec("b", 2)], start);
        // Rounds 5.. (after the delay); pair 1 loses its WAN-bound probes from round 10.
        let dead = |round: u32| (10..20).contains(&round);
        let changes = run(&mut engine, start, 5..30, |round, id, d| {
            !(id == 1 && dead(round) && d == Direction::OutOfLan)
        });
        let seen: Vec<(u32, &str, PairStatus)> = changes
            .iter()
            .map(|(r, c)| (*r, c.pair.as_str(), c.new))
            .collect();
        assert_eq!(
            seen,
            vec![
                // Up after 2 returned rounds (judged when the next round starts).
                (7, "a", PairStatus::Up),
                (7, "b", PairStatus::Up),
                // Rounds 10, 11, 12 lost: down 4 ms after round 12, the decisive one, was sent.
                (12, "a", PairStatus::Down),
                // Rounds 20, 21 back: up when round 22 starts.
                (22, "a", PairStatus::Up),
            ]
        );
        let down = &changes[2].1;
        assert_eq!(
            down.reason,
            "3 consecutive keep-alives lost (last: out of a-lan)"
        );
        let a = engine.pairs().find(|p| p.pair == "a").unwrap();
        assert_eq!(a.lost, [10, 0]);
        assert_eq!(a.changes, 3);
        assert_eq!(a.time_on_path_ns, [Some(25_000), Some(25_000)]);
    }

    #[test]
    fn a_round_is_judged_round_timeout_after_it_was_sent_and_a_later_keep_alive_is_lost() {
        let mut engine = Engine::new();
        let start = Instant::now();
        let mut fast = spec("a", 1);
        fast.timing.down_count = 1;
        engine.sync(vec![fast], start);
        let (probes, _) = engine.tick(start + 50 * MS, SystemTime::UNIX_EPOCH);
        assert_eq!(
            engine.next_due(),
            Some(start + 54 * MS),
            "the round's judgement"
        );
        let (none, changes) = engine.tick(start + 53 * MS, SystemTime::UNIX_EPOCH);
        assert!(none.is_empty() && changes.is_empty(), "not due yet");
        assert!(engine.received(&probes[0].frame, 10), "in time");
        let (none, changes) = engine.tick(start + 54 * MS, SystemTime::UNIX_EPOCH);
        assert!(none.is_empty(), "the next round is not due before 60 ms");
        assert_eq!(changes.len(), 1, "judged at 54 ms: {changes:?}");
        assert_eq!(changes[0].new, PairStatus::Down);
        assert!(
            !engine.received(&probes[1].frame, 10),
            "back after the round was judged: lost"
        );
        assert_eq!(engine.next_due(), Some(start + 60 * MS));
    }

    #[test]
    fn only_a_round_that_would_take_the_pair_down_is_judged_before_the_next_starts() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        // Down after 3 lost: the first two silent rounds are judged when the next starts,
        // so a keep-alive late by more than the timeout still counts.
        let (probes, _) = engine.tick(start + 50 * MS, SystemTime::UNIX_EPOCH);
        assert_eq!(engine.next_due(), Some(start + 60 * MS), "not decisive");
        for probe in &probes {
            assert!(engine.received(&probe.frame, 10), "late, counted");
        }
        engine.tick(start + 60 * MS, SystemTime::UNIX_EPOCH);
        engine.tick(start + 70 * MS, SystemTime::UNIX_EPOCH);
        let a = engine.pairs().next().unwrap();
        assert_eq!(
            a.lost_in_a_row, 1,
            "the round of 60 ms lost, judged at 70 ms"
        );
        engine.tick(start + 80 * MS, SystemTime::UNIX_EPOCH);
        // Two lost in a row: the round sent at 80 ms would be the third, judged at 84 ms.
        assert_eq!(engine.next_due(), Some(start + 84 * MS));
        let (_, changes) = engine.tick(start + 84 * MS, SystemTime::UNIX_EPOCH);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].new, PairStatus::Down);
        // Down already: the next silent rounds wait for the interval again.
        engine.tick(start + 90 * MS, SystemTime::UNIX_EPOCH);
        assert_eq!(engine.next_due(), Some(start + 100 * MS));
    }

    #[test]
    fn down_pairs_lists_what_is_down() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1), spec("b", 2)], start);
        run(&mut engine, start, 5..12, |_, id, _| id != 2);
        assert_eq!(
            engine.down_pairs(),
            BTreeSet::from([("ef1".to_string(), "b".to_string())])
        );
    }

    #[test]
    fn late_duplicate_and_foreign_frames_count_for_nothing() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        let (probes, _) = engine.tick(start + 50 * MS, SystemTime::UNIX_EPOCH);
        let first = probes[0].frame.clone();
        assert!(engine.received(&first, 10));
        assert!(!engine.received(&first, 10), "a duplicate");
        let (_, _) = engine.tick(start + 60 * MS, SystemTime::UNIX_EPOCH);
        assert!(
            !engine.received(&probes[1].frame, 10),
            "from the previous round"
        );
        let mut foreign = first.clone();
        foreign[14] = 99;
        assert!(!engine.received(&foreign, 10), "an unknown pair id");
        assert!(!engine.received(&[0u8; 10], 10), "garbage");
    }

    #[test]
    fn a_round_that_could_not_be_sent_is_not_a_loss() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        for round in 5..20 {
            engine.tick(start + round * 10 * MS, SystemTime::UNIX_EPOCH);
            engine.not_sent("ef1", "a");
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
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        run(&mut engine, start, 5..9, |_, _, _| true);
        let now = start + 100 * MS;
        let mut slower = spec("a", 1);
        slower.timing.interval = 20 * MS;
        engine.sync(vec![slower], now);
        assert_eq!(engine.pairs().next().unwrap().status, PairStatus::Up);
        let mut moved = spec("a", 1);
        moved.ports[1].1 = 40;
        engine.sync(vec![moved], now);
        assert_eq!(engine.pairs().next().unwrap().status, PairStatus::Init);
        assert_eq!(engine.next_due(), Some(now + 50 * MS));
        engine.sync(Vec::new(), now);
        assert_eq!(engine.pairs().count(), 0);
    }

    #[test]
    fn time_on_path_wraps_with_the_chip_clock() {
        let mut engine = Engine::new();
        let start = Instant::now();
        engine.sync(vec![spec("a", 1)], start);
        let (probes, _) = engine.tick(start + 50 * MS, SystemTime::UNIX_EPOCH);
        let mut back = probes[0].frame.clone();
        back[20..28].copy_from_slice(&(CLOCK_MASK - 9).to_be_bytes());
        assert!(engine.received(&back, 20));
        assert_eq!(engine.pairs().next().unwrap().time_on_path_ns[0], Some(30));
    }
}
