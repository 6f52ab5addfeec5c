//! Values read at scrape time (gauges, counters, seconds, state sets), kept in order.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::{Registry, Unit};

/// A series' labels, in the order they are written.
pub type Labels = Vec<(&'static str, String)>;

/// Values read at scrape time, written out in the order they were added (a registry's
/// families are hash maps: their series come out in any order), as a [`Collector`].
#[derive(Debug, Default)]
pub struct Values(Vec<Metric>);

#[derive(Debug)]
struct Metric {
    name: String,
    help: String,
    unit: Option<Unit>,
    series: Series,
}

#[derive(Debug)]
enum Series {
    Gauges(Vec<(Labels, i64)>),
    Floats(Vec<(Labels, f64)>),
    Counters(Vec<(Labels, u64)>),
}

impl Values {
    fn push(&mut self, name: &str, help: &str, unit: Option<Unit>, series: Series) {
        self.0.push(Metric {
            name: name.to_string(),
            // As the registry writes its own metrics' help.
            help: format!("{help}."),
            unit,
            series,
        });
    }

    pub fn gauges(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, i64)>,
    ) {
        let series = Series::Gauges(series.into_iter().collect());
        self.push(name, help, None, series);
    }

    pub fn gauge(&mut self, name: &str, help: &str, value: i64) {
        self.gauges(name, help, [(Labels::new(), value)]);
    }

    pub fn seconds(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, f64)>,
    ) {
        let series = Series::Floats(series.into_iter().collect());
        self.push(name, help, Some(Unit::Seconds), series);
    }

    pub fn bytes(&mut self, name: &str, help: &str, value: i64) {
        let series = Series::Gauges(vec![(Labels::new(), value)]);
        self.push(name, help, Some(Unit::Bytes), series);
    }

    pub fn counters(
        &mut self,
        name: &str,
        help: &str,
        series: impl IntoIterator<Item = (Labels, u64)>,
    ) {
        let series = Series::Counters(series.into_iter().collect());
        self.push(name, help, None, series);
    }

    pub fn counter(&mut self, name: &str, help: &str, value: u64) {
        self.counters(name, help, [(Labels::new(), value)]);
    }

    /// One series per state, 1 for the current one (a Prometheus "state set").
    pub fn state_set<'a>(
        &mut self,
        name: &str,
        help: &str,
        label: &'static str,
        states: &[&'static str],
        current: impl IntoIterator<Item = (Labels, &'a str)>,
    ) {
        let series = current.into_iter().flat_map(|(labels, now)| {
            states.iter().map(move |state| {
                let mut labels = labels.clone();
                labels.push((label, state.to_string()));
                (labels, i64::from(*state == now))
            })
        });
        self.gauges(name, help, series.collect::<Vec<_>>());
    }

    /// A registry of these values, to encode with others.
    pub fn into_registry(self) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        registry
    }
}

impl Collector for Values {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for m in &self.0 {
            let kind = match m.series {
                Series::Counters(_) => MetricType::Counter,
                Series::Gauges(_) | Series::Floats(_) => MetricType::Gauge,
            };
            let mut metric = encoder.encode_descriptor(&m.name, &m.help, m.unit.as_ref(), kind)?;
            match &m.series {
                Series::Gauges(series) => {
                    for (labels, value) in series {
                        ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
                    }
                }
                Series::Floats(series) => {
                    for (labels, value) in series {
                        ConstGauge::new(*value).encode(metric.encode_family(labels)?)?;
                    }
                }
                Series::Counters(series) => {
                    for (labels, value) in series {
                        ConstCounter::new(*value).encode(metric.encode_family(labels)?)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn series_come_out_in_order_and_state_sets_mark_the_current_state() {
        let mut values = Values::default();
        values.state_set(
            "efb_test_status",
            "test",
            "status",
            &["up", "down"],
            [
                (vec![("pair", "p2".to_string())], "down"),
                (vec![("pair", "p1".to_string())], "up"),
            ],
        );
        values.seconds("efb_test_wait", "test", [(Labels::new(), 0.5)]);
        values.counter("efb_test_events", "test", 3);
        let text = crate::render(&[Arc::new(values.into_registry())], false).unwrap();
        let expected = "\
# HELP efb_test_status test.
# TYPE efb_test_status gauge
efb_test_status{pair=\"p2\",status=\"up\"} 0
efb_test_status{pair=\"p2\",status=\"down\"} 1
efb_test_status{pair=\"p1\",status=\"up\"} 1
efb_test_status{pair=\"p1\",status=\"down\"} 0
# HELP efb_test_wait_seconds test.
# TYPE efb_test_wait_seconds gauge
efb_test_wait_seconds 0.5
# HELP efb_test_events_total test.
# TYPE efb_test_events_total counter
efb_test_events_total 3
";
        assert_eq!(text, expected);
    }
}
