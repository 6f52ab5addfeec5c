//! Property-based fuzzing of what every client's request becomes (`Request`, whatever the
//! protocol): any names, lines, paths, comments and inputs a client sends. Never a panic;
//! the audit's words for it quote the client's text by its first line, cut; and the guard
//! that admits a request by its kind, before the body is read, never admits less than the
//! body then needs (the kind's role is the least of its requests'). The case count keeps
//! this binary under a second (`EFB_FUZZ_CASES` for more, see efb-fuzz).

use efb_fuzz::config;
use efb_northbound::access::may;
use efb_northbound::auth::Role;
use efb_northbound::request::{CommitAsk, Counters, Request, first_line};
use proptest::prelude::*;

/// Text as clients send it: short or long, one line or many, any characters.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => efb_fuzz::json::text(),
        2 => ".{0,40}",
        1 => "(.{0,30}\n){0,4}",
        1 => (".{1,4}", 50usize..400).prop_map(|(s, n)| s.repeat(n)),
    ]
}

fn request() -> impl Strategy<Value = Request> {
    let simple = proptest::sample::select(vec![
        Request::Hello,
        Request::Status,
        Request::OpenSession,
        Request::CloseSession,
        Request::Discard,
        Request::Compare,
        Request::Confirm,
        Request::Save,
        Request::History,
        Request::CommitChanges,
        Request::ListKeys,
        Request::Audit,
        Request::RecentEvents,
        Request::WatchEvents,
    ]);
    let counters =
        proptest::sample::select(vec![Counters::Ports, Counters::Flows, Counters::Unknown]);
    prop_oneof![
        simple,
        text().prop_map(|user| Request::OpenSessionAs { user }),
        any::<u64>().prop_map(|session| Request::Logout { session }),
        text().prop_map(|lines| Request::EditLines { lines }),
        any::<usize>().prop_map(|bytes| Request::Load { bytes }),
        any::<u32>().prop_map(|index| Request::Rollback { index }),
        (any::<bool>(), any::<u32>(), any::<bool>(), text()).prop_map(
            |(check_only, confirm_seconds, offline, comment)| Request::Commit(CommitAsk {
                check_only,
                confirm_seconds,
                offline,
                comment,
            })
        ),
        text().prop_map(|path| Request::Show { path }),
        (text(), text()).prop_map(|(rpc, input)| Request::Lookup { rpc, input }),
        (text(), text()).prop_map(|(rpc, input)| Request::Call { rpc, input }),
        (counters, proptest::collection::vec(text(), 0..30))
            .prop_map(|(counters, names)| Request::ClearStatistics { counters, names }),
    ]
}

/// Bytes the audit's words may take for client text cut to its first line: 200
/// characters of at most 4 bytes, and "...".
const CUT: usize = 4 * 200 + 3;

/// The most bytes of client text the audit's words for `request` may quote: every text
/// cut to its first line, except the names efbd checks before it describes them (the user
/// another is recorded as, the operation's name) and the audit then bounds.
fn quoted_at_most(request: &Request) -> usize {
    match request {
        Request::OpenSessionAs { user } => user.len(),
        Request::EditLines { .. } | Request::Show { .. } => CUT,
        // The comment is quoted as Rust writes strings: a character escaped takes up to 10
        // bytes (`\u{10ffff}`).
        Request::Commit(_) => 10 * 200 + 8,
        Request::Lookup { rpc, .. } | Request::Call { rpc, .. } => rpc.len() + CUT,
        Request::ClearStatistics { .. } => 20 * (CUT + 1),
        _ => 0,
    }
}

proptest! {
    #![proptest_config(config(10000))]

    /// The audit's words for any request: no panic, the client's text quoted by its first
    /// lines, cut, and a few words of their own.
    #[test]
    fn any_request_is_described_in_bounded_words(request in request()) {
        let words = request.describe();
        prop_assert!(!words.is_empty());
        prop_assert!(
            words.len() <= 200 + quoted_at_most(&request),
            "{} bytes for {request:?}",
            words.len()
        );
    }

    /// A request the guard admitted by its kind needs no more than the kind said: whatever
    /// its body, a role the body allows was allowed by the kind.
    #[test]
    fn the_kind_never_asks_more_than_the_request(request in request()) {
        for role in [None, Some(Role::Viewer), Some(Role::Operator), Some(Role::Admin)] {
            match may(role, request.operation()) {
                Ok(()) => prop_assert!(
                    may(role, request.kind().operation()).is_ok(),
                    "{role:?} {request:?}"
                ),
                Err(denied) => prop_assert!(!denied.message("fuzz").is_empty()),
            }
        }
    }

    /// The first line of any text: a prefix of it, at most 200 characters and "...".
    #[test]
    fn first_lines_are_prefixes_cut_to_200_characters(text in text()) {
        let line = first_line(&text);
        let body = line.strip_suffix("...").unwrap_or(&line);
        prop_assert!(text.starts_with(body));
        prop_assert!(body.chars().count() <= 200);
        prop_assert!(!body.contains('\n'));
    }
}
