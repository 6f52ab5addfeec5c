//! What the benchmarks share: a site of many flows and how figures are printed.

use std::time::Duration;

/// The one-filter example site plus `flows` flows `sub0`, `sub1`... (one /32 each, to the
/// unit, alternating between the two links), as RFC 7951 JSON.
pub fn site_with_flows(flows: usize) -> String {
    site_with_flows_shaped(flows, FlowShape::OnLinks)
}

/// What each generated flow matches besides its /32 destination.
#[derive(Clone, Copy, Debug)]
pub enum FlowShape {
    /// TCP, on one of the two links (a leafref per flow for libyang to check).
    OnLinks,
    /// TCP to a port, on every link (no link named): as an operator's rule base loaded
    /// from a central system looks.
    ToPorts,
}

/// The one-filter example site plus `flows` flows of `shape`, as RFC 7951 JSON.
pub fn site_with_flows_shaped(flows: usize, shape: FlowShape) -> String {
    let text = std::fs::read_to_string(crate::repo().join("examples/one-filter-site.json"))
        .expect("the example site");
    let mut site: serde_json::Value = serde_json::from_str(&text).expect("the site is JSON");
    let Some(list) = site["ecofilter-balancer:ecofilter-balancer"]["flow"].as_array_mut() else {
        panic!("the example site has flows");
    };
    for i in 0..flows {
        let destination = format!("10.{}.{}.{}/32", (i >> 16) & 255, (i >> 8) & 255, i & 255);
        let mut flow = serde_json::json!({
            "name": format!("sub{i}"),
            "priority": 1000 + i,
            "match": {"dst-ipv4": destination, "ip-proto": 6},
            "action": {"to-ecofilter": {"ecofilter-unit": "ef1"}}
        });
        match shape {
            FlowShape::OnLinks => {
                flow["links"] = serde_json::json!([if i % 2 == 0 { "l1" } else { "l2" }]);
            }
            FlowShape::ToPorts => flow["match"]["dst-port"] = serde_json::json!(1 + i % 65535),
        }
        list.push(flow);
    }
    site.to_string()
}

/// The `p` quantile (0 to 1) of sorted times.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// One line: the name, then p50, p99 and max of `times`.
pub fn summary(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let Some(max) = times.last().copied() else {
        println!("{name:<52} no rounds");
        return;
    };
    println!(
        "{name:<52} p50 {:>10}  p99 {:>10}  max {:>10}",
        ms(percentile(&times, 0.5)),
        ms(percentile(&times, 0.99)),
        ms(max)
    );
}

/// Resident memory of a process now, in KiB (Linux).
pub fn resident_kib(pid: u32) -> u64 {
    rss_field(pid, "VmRSS:")
}

/// Highest resident memory of a process so far, in KiB (Linux).
pub fn peak_resident_kib(pid: u32) -> u64 {
    rss_field(pid, "VmHWM:")
}

fn rss_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time a process has used so far (user + system), from /proc (Linux).
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after its ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after the name.
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|i| fields.get(*i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}
