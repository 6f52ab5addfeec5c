//! `efb-target filter ...` and `efb-target port ...`: faults set on a running target through
//! its control service, so that a demo (or an engineer) can kill a filter or pull a cable.
//! What the target refuses (a port it lacks, two ports that are not a filter's pair) is
//! one line on standard error and exit status 2, as clap's usage errors; a target that
//! does not answer, one line naming its address and exit status 1.

use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use efb_target_proto::target_control_client::TargetControlClient;
use efb_target_proto::{
    Filter, GetFiltersRequest, PortRef, SetFilterRequest, SetPortStateRequest, port_ref,
};
use tonic::transport::{Channel, Endpoint};

const EXIT_STATUS: &str = "Exit status: 0 done, 2 refused (a port or a pair the target lacks, \
a bad argument), 1 no answer from the target.";

/// Longest a `--delay-us` can be without its nanoseconds overflowing.
const MAX_DELAY_US: u64 = u64::MAX / 1000;

#[derive(Subcommand, Debug)]
pub enum Control {
    /// Show the emulated filter cabled to two pair ports, or change what the flags name
    /// (alive or dead, loss, delay), the rest staying as it is.
    #[command(after_help = EXIT_STATUS)]
    Filter {
        /// The pair's two ports (p9-0 p9-1, as the chip's gNMI names them; p9 is p9-0),
        /// either order.
        port_a: String,
        port_b: String,
        /// The filter returns nothing (as when it crashed).
        #[arg(long, conflicts_with = "alive")]
        dead: bool,
        /// The filter works again.
        #[arg(long)]
        alive: bool,
        /// Share of frames it loses, 0 to 1.
        #[arg(long, value_parser = ratio)]
        loss: Option<f64>,
        /// Time a frame spends in it, in microseconds.
        #[arg(long, value_parser = clap::value_parser!(u64).range(..=MAX_DELAY_US))]
        delay_us: Option<u64>,
        /// The target's address.
        #[arg(long, default_value = "127.0.0.1:9559")]
        target: String,
    },
    /// Bring a port up or down (a pulled cable).
    #[command(after_help = EXIT_STATUS)]
    Port {
        /// The port (p1-0, as the chip's gNMI names it; p1 is p1-0).
        port: String,
        #[arg(value_parser = ["up", "down"])]
        state: String,
        /// The target's address.
        #[arg(long, default_value = "127.0.0.1:9559")]
        target: String,
    },
}

#[derive(Debug, thiserror::Error)]
#[error("{0}: expected a ratio from 0 to 1, e.g. 0.3")]
struct NotARatio(String);

fn ratio(text: &str) -> Result<f64, NotARatio> {
    match text.parse::<f64>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(NotARatio(text.to_string())),
    }
}

/// Why a subcommand failed, in one line for the operator.
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The target (or the command line) refused what was asked.
    #[error("{0}")]
    Refused(String),
    /// No answer from the target, or not one of efb-target's.
    #[error("{0}")]
    NoAnswer(String),
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        match self {
            Failure::Refused(_) => ExitCode::from(2),
            Failure::NoAnswer(_) => ExitCode::from(1),
        }
    }

    /// A refusal says what the target said; anything else names the target too.
    fn of_status(target: &str, status: &tonic::Status) -> Failure {
        use tonic::Code;
        let message = one_line(status.message());
        match status.code() {
            Code::InvalidArgument
            | Code::NotFound
            | Code::OutOfRange
            | Code::FailedPrecondition => Failure::Refused(message),
            Code::Unimplemented => Failure::NoAnswer(format!(
                "{target} does not serve efb-target's control service"
            )),
            _ => Failure::NoAnswer(format!("efb-target at {target}: {message}")),
        }
    }
}

/// Status messages may span lines (a transport error's causes): the operator gets one.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn port(name: &str) -> Option<PortRef> {
    Some(PortRef {
        port: Some(port_ref::Port::Name(name.to_string())),
    })
}

/// Runs a subcommand: its line on standard output, or why not on standard error.
pub async fn run(control: Control) -> ExitCode {
    let done = match control {
        Control::Filter {
            port_a,
            port_b,
            dead,
            alive,
            loss,
            delay_us,
            target,
        } => {
            let change = FilterChange {
                dead: (dead || alive).then_some(dead),
                loss,
                delay_ns: delay_us.map(|us| us * 1000),
            };
            filter(&target, &port_a, &port_b, change).await
        }
        Control::Port {
            port,
            state,
            target,
        } => set_port(&target, &port, state == "up").await,
    };
    match done {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("efb-target: {failure}");
            failure.exit_code()
        }
    }
}

/// What the flags of `efb-target filter` name; nothing: show the filter.
#[derive(Clone, Copy, Debug)]
struct FilterChange {
    dead: Option<bool>,
    loss: Option<f64>,
    delay_ns: Option<u64>,
}

impl FilterChange {
    /// The request's update mask: only what a flag names changes.
    fn paths(&self) -> Vec<String> {
        [
            ("dead", self.dead.is_some()),
            ("loss_ratio", self.loss.is_some()),
            ("delay_ns", self.delay_ns.is_some()),
        ]
        .into_iter()
        .filter(|(_, named)| *named)
        .map(|(path, _)| path.to_string())
        .collect()
    }
}

async fn filter(
    target: &str,
    port_a: &str,
    port_b: &str,
    change: FilterChange,
) -> Result<String, Failure> {
    let mut client = connect(target).await?;
    let paths = change.paths();
    let now = if paths.is_empty() {
        let request = GetFiltersRequest {
            port_a: port(port_a),
            port_b: port(port_b),
        };
        let answer = client.get_filters(request).await;
        let filters = answer.map_err(|s| Failure::of_status(target, &s))?;
        filters.into_inner().filters.into_iter().next()
    } else {
        let request = SetFilterRequest {
            port_a: port(port_a),
            port_b: port(port_b),
            delay_ns: change.delay_ns.unwrap_or_default(),
            loss_ratio: change.loss.unwrap_or_default(),
            dead: change.dead.unwrap_or_default(),
            update_mask: Some(prost_types::FieldMask { paths }),
        };
        let answer = client.set_filter(request).await;
        let set = answer.map_err(|s| Failure::of_status(target, &s))?;
        set.into_inner().filter
    };
    now.map(|f| describe(&f)).ok_or_else(|| {
        Failure::NoAnswer(format!(
            "efb-target at {target} did not say how the filter is"
        ))
    })
}

/// `filter between p9-0 and p9-1: dead, loss 0, delay 25 us`.
fn describe(filter: &Filter) -> String {
    let state = if filter.dead { "dead" } else { "alive" };
    // Nanoseconds as a delay is set (whole microseconds) show without a fraction.
    let delay_us = filter.delay_ns as f64 / 1000.0;
    format!(
        "filter between {} and {}: {state}, loss {}, delay {delay_us} us",
        filter.port_a, filter.port_b, filter.loss_ratio
    )
}

async fn set_port(target: &str, name: &str, up: bool) -> Result<String, Failure> {
    let mut client = connect(target).await?;
    let request = SetPortStateRequest {
        port: port(name),
        up,
    };
    let answer = client.set_port_state(request).await;
    let set = answer.map_err(|s| Failure::of_status(target, &s))?;
    let state = if up { "up" } else { "down" };
    Ok(format!("port {}: {state}", set.into_inner().name))
}

/// Long enough for a loaded machine, short enough that a dropped SYN does not look like
/// a hang.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

async fn connect(target: &str) -> Result<TargetControlClient<Channel>, Failure> {
    let endpoint = Endpoint::from_shared(format!("http://{target}"))
        .map_err(|_| Failure::Refused(format!("--target {target:?} is not HOST:PORT")))?
        .connect_timeout(CONNECT_TIMEOUT)
        .timeout(CALL_TIMEOUT);
    let channel = endpoint.connect().await.map_err(|e| {
        Failure::NoAnswer(format!(
            "cannot reach efb-target at {target}: {}",
            root_cause(&e)
        ))
    })?;
    Ok(TargetControlClient::new(channel))
}

/// The last of an error's causes: what went wrong, not the layers it went through
/// ("Connection refused (os error 111)" rather than "transport error").
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    one_line(&cause.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_ratio_is_a_number_from_0_to_1() {
        assert!(matches!(ratio("0.3"), Ok(r) if r == 0.3));
        assert!(matches!(ratio("1"), Ok(r) if r == 1.0));
        for bad in ["1.5", "-0.1", "thirty"] {
            let err = ratio(bad).map(|_| ()).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("{bad}: expected a ratio from 0 to 1, e.g. 0.3")
            );
        }
    }
}
