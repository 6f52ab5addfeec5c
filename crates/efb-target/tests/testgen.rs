//! The judge of the emulator: p4testgen's tests of efb.p4, replayed against efb-target.
//!
//! p4testgen (p4lang/p4c's symbolic executor, with its Tofino target) read the program and
//! wrote, for paths through parser, ingress, egress and deparser, the table entries a path
//! needs, an input frame and the frame the chip sends out of which port (bytes it cannot
//! know, such as timestamps, as don't-care nibbles), or nothing when the chip drops it
//! (p4/testgen/*.stf; p4/README.md says how they were made). Each test runs here against a
//! fresh efb-target (profile stratum-tofino, filters not cabled): the entries through
//! P4Runtime by name (the compiler's P4Info resolves them), the frame on the test's device
//! port (a packet-out when that is the CPU port), and the target must send exactly the
//! expected frame out of the expected port (a packet-in for the CPU port), or nothing at
//! all. Every test is reported; any disagreement fails the run. One difference is accepted,
//! and pinned by its own test: p4testgen cannot evaluate the egress length check
//! (`chip_drops_for_length`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};

use common::{Bench, M, Session, entry, insert, update};
use efb_p4info::names::{ActionName, FieldName, TableName};
use efb_target::control_proto as pb;
use futures::StreamExt;
use p4runtime_proto::p4::v1 as p4;
use sha2::{Digest, Sha256};

fn testgen_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../p4/testgen")
}

/// A frame in or out: (device port, bytes).
type Frame = (u32, Vec<u8>);
/// What a test expects: a frame out of a port (bytes with don't-care masks), or a drop.
type Expect = Option<(u32, Vec<Expected>)>;

/// A byte the test expects: its value where the mask has ones (a `*` nibble is don't-care).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Expected {
    value: u8,
    mask: u8,
}

#[derive(Debug, Default)]
struct StfTest {
    name: String,
    /// `add` and `setdefault` lines, in order.
    writes: Vec<Write>,
    packet: Frame,
    expect: Expect,
    /// Where the outer IP packet ends (FCS included), as ingress's `check_length` computes
    /// it: what egress compares with `pkt_length`.
    ip_end: Option<u32>,
    /// From the trace: the outer IP header's version and byte offset in the frame, and the
    /// offset `ip_offset` gave, when ingress checked the length.
    length_check: LengthCheck,
    /// The trace shows an extraction that failed for want of bytes.
    parser_fell_short: bool,
}

#[derive(Debug)]
enum Write {
    Add {
        table: String,
        priority: i32,
        matches: Vec<(String, M)>,
        action: String,
        params: Vec<(String, u128)>,
    },
    Default {
        table: String,
        action: String,
        params: Vec<(String, u128)>,
    },
}

fn number(text: &str) -> u128 {
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u128::from_str_radix(hex, 16).unwrap(),
        None => text.parse().unwrap(),
    }
}

/// `0x1F` (exact) or `0b10**1` (ternary: `*` bits are don't-care).
fn match_value(text: &str) -> M {
    let Some(bits) = text.strip_prefix("0b") else {
        return M::Exact(number(text));
    };
    let (mut value, mut mask) = (0u128, 0u128);
    for c in bits.chars() {
        value <<= 1;
        mask <<= 1;
        match c {
            '1' => (value, mask) = (value | 1, mask | 1),
            '0' => mask |= 1,
            _ => {}
        }
    }
    M::Ternary(value, mask)
}

/// `EfbIngress.set_link_ports(lan_port:0x5,wan_port:0x6)`.
fn action_call(text: &str) -> (String, Vec<(String, u128)>) {
    let (name, args) = text.split_once('(').unwrap();
    let args = args.trim_end_matches(')');
    let params = args
        .split(',')
        .filter(|a| !a.is_empty())
        .map(|a| {
            let (p, v) = a.split_once(':').unwrap();
            (p.to_string(), number(v))
        })
        .collect();
    (name.to_string(), params)
}

fn hex_bytes(text: &str) -> Vec<Expected> {
    let nibbles: Vec<char> = text.chars().collect();
    nibbles
        .chunks(2)
        .map(|pair| {
            let nibble = |c: char| c.to_digit(16).map_or((0, 0), |d| (d as u8, 0xF));
            let ((hi, hm), (lo, lm)) = (nibble(pair[0]), nibble(pair[1]));
            Expected {
                value: hi << 4 | lo,
                mask: hm << 4 | lm,
            }
        })
        .collect()
}

/// The balancing method a suite was generated with (`-DEFB_DEFAULT_METHOD=`, by its file
/// names' prefix): p4testgen runs only the default action the program declares, so the
/// layer-4 and destination-address hashes have suites of their own. On the target, the
/// method is the default entry the controller sets: the test's first write.
fn generated_method(name: &str) -> Option<&'static str> {
    if name.starts_with("l4_") {
        Some("EfbIngress.hash_layer4")
    } else if name.starts_with("dst_") {
        Some("EfbIngress.hash_dst_ip")
    } else {
        None
    }
}

fn parse_stf(name: &str, text: &str) -> StfTest {
    let mut test = StfTest {
        name: name.to_string(),
        ..StfTest::default()
    };
    if let Some(action) = generated_method(name) {
        test.writes.push(Write::Default {
            table: "EfbIngress.balancing".to_string(),
            action: action.to_string(),
            params: Vec::new(),
        });
    }
    for line in text.lines().map(str::trim) {
        test.length_check.read_trace(line);
        if line.starts_with("# [ExtractFailure]") {
            test.parser_fell_short = true;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "add" => {
                let table = words[1].to_string();
                let mut rest = &words[2..];
                let mut priority = 0;
                if let Ok(p) = rest[0].parse::<i32>() {
                    priority = p;
                    rest = &rest[1..];
                }
                let (call, fields) = rest.split_last().unwrap();
                let matches = fields
                    .iter()
                    .map(|f| {
                        let (field, value) = f.split_once(':').unwrap();
                        (field.to_string(), match_value(value))
                    })
                    .collect();
                let (action, params) = action_call(call);
                test.writes.push(Write::Add {
                    table,
                    priority,
                    matches,
                    action,
                    params,
                });
            }
            "setdefault" => {
                let (action, params) = action_call(&words[2..].join(""));
                test.writes.push(Write::Default {
                    table: words[1].to_string(),
                    action,
                    params,
                });
            }
            "packet" => {
                let bytes = hex_bytes(words[2]).iter().map(|b| b.value).collect();
                test.packet = (words[1].parse().unwrap(), bytes);
            }
            "expect" => {
                let data = words[2].trim_end_matches('$');
                test.expect = Some((words[1].parse().unwrap(), hex_bytes(data)));
            }
            other => panic!("{name}: an STF command the replayer does not know: {other}"),
        }
    }
    test.ip_end = test.length_check.ip_end(&test.packet.1);
    test
}

/// What a test's trace says of the length check. The trace's computed values can be those
/// of an earlier solution than the final frame (p4testgen solves again once it knows a
/// hash), but the path is the same: which headers were extracted where, which constant
/// entry `ip_offset` took, whether `check_length` ran. The length itself is read from the
/// frame at the place the trace names.
#[derive(Debug, Default)]
struct LengthCheck {
    outer_ip: Option<(u8, usize)>,
    offset: Option<u32>,
    checked: bool,
}

impl LengthCheck {
    fn read_trace(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("# [ExtractSuccess] hdr.") {
            let version = match rest.split_once('@') {
                Some(("ipv4", _)) => 4,
                Some(("ipv6", _)) => 6,
                _ => return,
            };
            let bits: String = rest[5..].chars().take_while(char::is_ascii_digit).collect();
            if self.outer_ip.is_none()
                && let Ok(bits) = bits.parse::<usize>()
            {
                self.outer_ip = Some((version, bits / 8));
            }
        } else if let Some((_, arg)) = line.split_once("Chosen action: set_ip_offset(16w") {
            let digits: String = arg.chars().take_while(char::is_ascii_digit).collect();
            self.offset = digits.parse().ok();
        } else if line.starts_with("# [AssignmentStatement]: hdr.bridged.ip_end = md.ip_offset") {
            self.checked = true;
        }
    }

    /// `ip_offset |+| IP length` (IPv6: payload length |+| 40), 16 bits, saturating.
    fn ip_end(&self, frame: &[u8]) -> Option<u32> {
        if !self.checked {
            return None;
        }
        let (version, at) = self.outer_ip?;
        let field = if version == 4 { at + 2 } else { at + 4 };
        let value = u32::from(u16::from_be_bytes([
            *frame.get(field)?,
            *frame.get(field + 1)?,
        ]));
        let ip_len = if version == 4 {
            value
        } else {
            (value + 40).min(0xFFFF)
        };
        Some((self.offset? + ip_len).min(0xFFFF))
    }
}

/// The tests, by suite (the file name's prefix) and number.
fn tests() -> Vec<StfTest> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(testgen_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "stf"))
        .collect();
    let order = |p: &PathBuf| {
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        let (suite, number) = stem.rsplit_once('_').unwrap_or((&stem, "0"));
        (suite.to_string(), number.parse::<u32>().unwrap_or(0))
    };
    files.sort_by_key(order);
    files
        .iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            parse_stf(&name, &std::fs::read_to_string(p).unwrap())
        })
        .collect()
}

/// A name a test names, as the program's (p4testgen writes only the program's names).
fn program_name<N>(find: impl Fn(&str) -> Option<N>, name: &str) -> N {
    find(name).unwrap_or_else(|| panic!("{name}: not a name of p4/efb.p4"))
}

fn program_params(params: &[(String, u128)]) -> Vec<(FieldName, u128)> {
    params
        .iter()
        .map(|(p, v)| (program_name(FieldName::find, p), *v))
        .collect()
}

/// The P4Runtime updates of a test's writes.
fn updates(bench: &Bench, test: &StfTest) -> Vec<p4::Update> {
    test.writes
        .iter()
        .map(|w| match w {
            Write::Add {
                table,
                priority,
                matches,
                action,
                params,
            } => {
                // P4Runtime omits don't-care fields (a zero mask) of ternary tables.
                let matches: Vec<(FieldName, M)> = matches
                    .iter()
                    .filter(|(_, m)| !matches!(m, M::Ternary(_, 0)))
                    .map(|(f, m)| (program_name(FieldName::find, f), m.clone()))
                    .collect();
                insert(entry(
                    &bench.index,
                    program_name(TableName::find, table),
                    &matches,
                    program_name(ActionName::find, action),
                    &program_params(params),
                    *priority,
                ))
            }
            Write::Default {
                table,
                action,
                params,
            } => {
                let mut e = entry(
                    &bench.index,
                    program_name(TableName::find, table),
                    &[],
                    program_name(ActionName::find, action),
                    &program_params(params),
                    0,
                );
                e.is_default_action = true;
                update(p4::update::Type::Modify, e)
            }
        })
        .collect()
}

/// What left the target: (device port, bytes); a packet-in as the CPU port's frame, its
/// header (ingress port, arrival time) before the payload, as the chip puts it there.
async fn outputs(bench: &mut Bench, session: &mut Session, cpu_port: u32) -> Vec<Frame> {
    let request = pb::ReadFramesRequest {
        ports: Vec::new(),
        min_frames: 0,
        timeout_ms: 0,
        keep: false,
    };
    let frames = bench
        .control
        .read_frames(request)
        .await
        .unwrap()
        .into_inner();
    let mut out: Vec<Frame> = frames
        .frames
        .into_iter()
        .map(|f| (f.device_port, f.payload))
        .collect();
    let info = bench.index.packet_in().unwrap().clone();
    // The injection was handled when its answer came, and any packet-in was queued on the
    // controller's stream by then. Asking for arbitration again puts an answer behind them on
    // that stream: what comes before it is everything the frame sent to the controller.
    session
        .tx
        .send(common::arbitration(
            common::DEVICE_ID,
            session.election_id,
            "",
        ))
        .await
        .unwrap();
    loop {
        match session.next().await.unwrap().update {
            Some(p4::stream_message_response::Update::Packet(pin)) => {
                out.push((cpu_port, packet_in_bytes(&info, &pin)))
            }
            Some(p4::stream_message_response::Update::Arbitration(_)) => break,
            _ => {}
        }
    }
    out
}

/// A packet-in as the chip's CPU port gets it: the `packet_in` header's fields, whole bytes
/// in P4Info order, then the payload.
fn packet_in_bytes(info: &efb_p4info::PacketMetadataInfo, pin: &p4::PacketIn) -> Vec<u8> {
    let mut bytes = Vec::new();
    for field in &info.fields {
        let value = pin
            .metadata
            .iter()
            .find(|m| m.metadata_id == field.id)
            .map_or(0, |m| efb_target::bytes::to_u128(&m.value));
        let width = (field.bitwidth as usize).div_ceil(8);
        bytes.extend_from_slice(&value.to_be_bytes()[16 - width..]);
    }
    bytes.extend_from_slice(&pin.payload);
    bytes
}

fn matches_expected(got: &[u8], expected: &[Expected]) -> bool {
    got.len() == expected.len()
        && got
            .iter()
            .zip(expected)
            .all(|(g, e)| g & e.mask == e.value & e.mask)
}

fn shown(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect()
}

/// Runs one test against a fresh target; `Err` says how the target disagreed.
async fn replay(test: &StfTest, packet: &Frame, expect: &Expect) -> Result<(), String> {
    let (mut bench, mut session) = Bench::ready_for_replay().await;
    let cpu_port = bench.map.cpu_port();
    let updates = updates(&bench, test);
    for u in updates {
        bench
            .write(vec![u])
            .await
            .map_err(|e| format!("the target refused an entry: {:?}", e.details))?;
    }
    let (port, frame) = packet;
    let request = pb::InjectFramesRequest {
        frames: vec![pb::InjectedFrame {
            port: Some(pb::PortRef {
                port: Some(pb::port_ref::Port::DevicePort(*port)),
            }),
            payload: frame.clone(),
        }],
    };
    bench
        .control
        .inject_frames(request)
        .await
        .map_err(|e| format!("injecting on port {port}: {}", e.message()))?;
    let got = outputs(&mut bench, &mut session, cpu_port).await;
    match (expect, got.as_slice()) {
        (None, []) => Ok(()),
        (None, out) => Err(format!(
            "expected a drop; the target sent {}",
            out.iter()
                .map(|(p, f)| format!("{} bytes out of port {p}", f.len()))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        (Some((port, _)), []) => {
            let counted: Vec<(String, u64)> = bench
                .drops()
                .await
                .into_iter()
                .filter(|(_, n)| *n > 0)
                .collect();
            Err(format!(
                "expected a frame out of port {port}; the target dropped it (counted: {counted:?})"
            ))
        }
        (Some((port, expected)), [(out_port, out)]) => {
            if out_port != port {
                return Err(format!(
                    "expected port {port}; the target used port {out_port}"
                ));
            }
            if matches_expected(out, expected) {
                return Ok(());
            }
            let first = out
                .iter()
                .zip(expected)
                .position(|(g, e)| g & e.mask != e.value & e.mask)
                .unwrap_or(out.len().min(expected.len()));
            Err(format!(
                "out of port {port}: {} bytes, {} expected; first difference at byte {first}\n  got      {}\n  expected {}",
                out.len(),
                expected.len(),
                shown(&out[first.saturating_sub(4)..out.len().min(first + 24)]),
                shown(
                    &expected[first.saturating_sub(4)..expected.len().min(first + 24)]
                        .iter()
                        .map(|e| e.value)
                        .collect::<Vec<_>>()
                )
            ))
        }
        (Some(_), out) => Err(format!(
            "the target sent {} frames; one expected",
            out.len()
        )),
    }
}

/// The one difference accepted: p4testgen's Tofino model leaves `eg_intr_md.pkt_length`
/// free (tainted), so it cannot evaluate the egress length check and takes `length_ok` for
/// every frame. Where the frame (with its 4-byte FCS, as `pkt_length` counts it) ends before
/// the IP end ingress computed, the chip's egress drops it (efb.p4, `ip_length`): that,
/// not p4testgen's frame, is what the target must do.
fn chip_drops_for_length(test: &StfTest) -> bool {
    test.ip_end
        .is_some_and(|end| end > frame_with_fcs(&test.packet.1))
}

fn frame_with_fcs(frame: &[u8]) -> u32 {
    frame.len() as u32 + 4
}

/// The same test with its frame padded to its IP end (where the rewrite cannot be made): the
/// program never reads bytes past the
/// headers it parsed (they leave as they came, after the deparsed headers), so the padding
/// changes nothing but the length check, which it now passes: the chip sends p4testgen's
/// frame with the same padding at its end. Only for tests whose parser read every header it
/// wanted (a longer frame would otherwise take another path).
fn padded_to_ip_end(test: &StfTest) -> Option<(Frame, Expect)> {
    let end = test.ip_end?;
    let pad = end.checked_sub(frame_with_fcs(&test.packet.1))? as usize;
    if test.parser_fell_short {
        return None;
    }
    let (port, mut frame) = test.packet.clone();
    frame.resize(frame.len() + pad, 0);
    let expect = test.expect.clone().map(|(out_port, mut bytes)| {
        bytes.resize(
            bytes.len() + pad,
            Expected {
                value: 0,
                mask: 0xFF,
            },
        );
        (out_port, bytes)
    });
    Some(((port, frame), expect))
}

/// The same test with its outer IP length rewritten to end with the frame (and, for
/// IPv4, the header checksum made right again), as a real sender's frame would: p4testgen
/// fills lengths at random, up to 64 KiB past a frame of 100 bytes. The program never
/// changes an IP header, so the expected frame carries the same two rewrites where the
/// header lands in it (headers are added or removed only before it). `None` when the
/// frame is too short for its IP header, or the parser fell short.
fn rewritten_to_frame_end(test: &StfTest) -> Option<(Frame, Expect)> {
    let (version, at) = test.length_check.outer_ip?;
    let offset = test.length_check.offset?;
    if test.parser_fell_short || !test.length_check.checked {
        return None;
    }
    let ip_len = frame_with_fcs(&test.packet.1).checked_sub(offset)?;
    let (field, value) = match version {
        4 if ip_len >= 20 => (at + 2, ip_len),
        6 if ip_len >= 40 => (at + 4, ip_len - 40),
        _ => return None,
    };
    let value = u16::try_from(value).ok()?.to_be_bytes();
    let (port, mut frame) = test.packet.clone();
    frame.get_mut(field..field + 2)?.copy_from_slice(&value);
    let checksum = if version == 4 {
        let header_len = usize::from(frame.get(at)? & 0x0F) * 4;
        let header = frame.get_mut(at..at + header_len)?;
        header[10..12].copy_from_slice(&[0, 0]);
        let sum = ipv4_checksum(header);
        header[10..12].copy_from_slice(&sum);
        Some(sum)
    } else {
        None
    };
    let expect = match test.expect.clone() {
        None => None,
        Some((out_port, mut bytes)) => {
            let shift = bytes.len() as isize - test.packet.1.len() as isize;
            let out_at = usize::try_from(at as isize + shift).ok()?;
            let mut set = |place: usize, two: [u8; 2]| -> Option<()> {
                for (i, value) in two.iter().enumerate() {
                    let byte = bytes.get_mut(out_at + place + i)?;
                    byte.value = value & byte.mask;
                }
                Some(())
            };
            set(field - at, value)?;
            if let Some(sum) = checksum {
                set(10, sum)?;
            }
            Some((out_port, bytes))
        }
    };
    Some(((port, frame), expect))
}

/// The IPv4 header checksum of `header` (its checksum field zero).
fn ipv4_checksum(header: &[u8]) -> [u8; 2] {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], *w.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    (!(sum as u16)).to_be_bytes()
}

/// The replays of one test: as p4testgen wrote it, or, where the accepted difference
/// applies, with the chip's verdict and again with its IP length rewritten to end with the
/// frame (padded to its IP end where that cannot be).
fn runs_of(test: &StfTest) -> Vec<(String, Frame, Expect)> {
    if !chip_drops_for_length(test) {
        return vec![(test.name.clone(), test.packet.clone(), test.expect.clone())];
    }
    let mut runs = vec![(
        format!(
            "{} (as generated: IP end past the frame, the chip drops it)",
            test.name
        ),
        test.packet.clone(),
        None,
    )];
    if let Some((packet, expect)) = rewritten_to_frame_end(test) {
        runs.push((
            format!("{} (IP length rewritten to end with the frame)", test.name),
            packet,
            expect,
        ));
    } else if let Some((packet, expect)) = padded_to_ip_end(test) {
        runs.push((
            format!("{} (padded to its IP end)", test.name),
            packet,
            expect,
        ));
    }
    runs
}

/// Replays at once: each on its own target, most of a replay is waiting.
const AT_ONCE: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_generated_test_passes_on_the_target() {
    let mut tests = tests();
    assert!(!tests.is_empty(), "no tests in {}", testgen_dir().display());
    // EFB_TESTGEN_ONLY=fwd_116 replays the tests whose file name starts with that.
    if let Ok(only) = std::env::var("EFB_TESTGEN_ONLY") {
        tests.retain(|t| t.name.starts_with(&only));
    }
    let runs: Vec<(&StfTest, String, Frame, Expect)> = tests
        .iter()
        .flat_map(|t| runs_of(t).into_iter().map(move |(n, p, e)| (t, n, p, e)))
        .collect();
    let verdicts: Vec<(String, Result<(), String>)> =
        futures::stream::iter(runs)
            .map(|(test, name, packet, expect)| async move {
                (name, replay(test, &packet, &expect).await)
            })
            .buffered(AT_ONCE)
            .collect()
            .await;
    let mut failures = Vec::new();
    for (name, verdict) in &verdicts {
        match verdict {
            Ok(()) => println!("{name}: pass"),
            Err(why) => {
                println!("{name}: FAIL: {why}");
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    let by_length = tests.iter().filter(|t| chip_drops_for_length(t)).count();
    println!(
        "{} tests ({} replays), {} disagreements; {by_length} with an IP end past their frame",
        tests.len(),
        verdicts.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The accepted difference is a real one and stays needed: some generated tests expect a
/// frame out where the chip's length check drops it, and p4testgen's trace shows why (it
/// took `length_ok` with `pkt_length` unknown).
#[test]
fn the_length_check_difference_is_real() {
    let tests = tests();
    let judged: Vec<&StfTest> = tests.iter().filter(|t| chip_drops_for_length(t)).collect();
    assert!(
        judged.iter().any(|t| t.expect.is_some()),
        "no generated test expects out a frame the length check drops: remove the difference"
    );
    for test in judged.iter().filter(|t| t.expect.is_some()) {
        let trace = std::fs::read_to_string(testgen_dir().join(&test.name)).unwrap();
        assert!(
            trace.contains("eg_intr_md.pkt_length = Taint"),
            "{}: p4testgen now knows pkt_length; the difference may no longer be needed",
            test.name
        );
        assert!(
            trace.contains("[MethodCall]: length_ok();"),
            "{}: expected out without p4testgen taking length_ok",
            test.name
        );
    }
}

/// The tests belong to the program: when efb.p4 changes, they are generated again.
#[test]
fn the_tests_are_of_the_program_as_it_is() {
    let recorded = std::fs::read_to_string(testgen_dir().join("source.sha256")).unwrap();
    let source = std::fs::read(testgen_dir().join("../efb.p4")).unwrap();
    let digest: String = Sha256::digest(&source)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        recorded.starts_with(&digest),
        "p4/efb.p4 changed since p4/testgen/ was generated (sha256 {digest}, tests of {}): \
         generate them again (p4/README.md)",
        recorded.trim()
    );
}
