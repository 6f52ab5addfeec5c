//! `efb-target filter ...` and `efb-target port ...`: faults set on a running target through
//! its control service, so that a demo (or an engineer) can kill a filter or pull a cable.

use anyhow::Context;
use clap::Subcommand;
use efb_target_proto::target_control_client::TargetControlClient;
use efb_target_proto::{PortRef, SetFilterRequest, SetPortStateRequest, port_ref};

#[derive(Subcommand, Debug)]
pub enum Control {
    /// Set the emulated filter cabled to two pair ports: alive or dead, loss, delay.
    Filter {
        /// The pair's two ports (front-panel names such as p9-0 p9-1), either order.
        port_a: String,
        port_b: String,
        /// The filter returns nothing (as when it crashed).
        #[arg(long, conflicts_with = "alive")]
        dead: bool,
        /// The filter works again.
        #[arg(long)]
        alive: bool,
        /// Share of frames it loses, 0 to 1.
        #[arg(long, default_value_t = 0.0, value_parser = ratio)]
        loss: f64,
        /// Time a frame spends in it, in microseconds.
        #[arg(long, default_value_t = 25)]
        delay_us: u64,
        /// The target's address.
        #[arg(long, default_value = "127.0.0.1:9559")]
        target: String,
    },
    /// Bring a port up or down (a pulled cable).
    Port {
        port: String,
        #[arg(value_parser = ["up", "down"])]
        state: String,
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

fn port(name: &str) -> Option<PortRef> {
    Some(PortRef {
        port: Some(port_ref::Port::Name(name.to_string())),
    })
}

pub async fn run(control: Control) -> anyhow::Result<()> {
    match control {
        Control::Filter {
            port_a,
            port_b,
            dead,
            alive: _,
            loss,
            delay_us,
            target,
        } => {
            let mut client = connect(&target).await?;
            client
                .set_filter(SetFilterRequest {
                    port_a: port(&port_a),
                    port_b: port(&port_b),
                    delay_ns: delay_us * 1000,
                    loss_ratio: loss,
                    dead,
                })
                .await
                .with_context(|| format!("filter between {port_a} and {port_b}"))?;
            let what = if dead { "dead" } else { "alive" };
            println!(
                "filter between {port_a} and {port_b}: {what}, loss {loss}, delay {delay_us} us"
            );
        }
        Control::Port {
            port: name,
            state,
            target,
        } => {
            let mut client = connect(&target).await?;
            client
                .set_port_state(SetPortStateRequest {
                    port: port(&name),
                    up: state == "up",
                })
                .await
                .with_context(|| format!("port {name}"))?;
            println!("port {name}: {state}");
        }
    }
    Ok(())
}

async fn connect(target: &str) -> anyhow::Result<TargetControlClient<tonic::transport::Channel>> {
    TargetControlClient::connect(format!("http://{target}"))
        .await
        .with_context(|| format!("cannot reach efb-target at {target}"))
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
