//! Data paths of configuration nodes, for messages that name where a problem is.

use efb_yang::path::quote;

const BALANCER: &str = "/ecofilter-balancer:ecofilter-balancer";

pub fn port(name: &str) -> String {
    format!("/ecofilter-balancer:ports/port[name={}]", quote(name))
}

pub fn link(name: &str) -> String {
    format!("{BALANCER}/link[name={}]", quote(name))
}

pub fn links() -> String {
    format!("{BALANCER}/link")
}

pub fn unit(name: &str) -> String {
    format!("{BALANCER}/ecofilter-unit[name={}]", quote(name))
}

pub fn pair(unit_name: &str, name: &str) -> String {
    format!("{}/pair[name={}]", unit(unit_name), quote(name))
}

pub fn flows() -> String {
    format!("{BALANCER}/flow")
}

pub fn flow(name: &str) -> String {
    format!("{BALANCER}/flow[name={}]", quote(name))
}

pub fn profile(name: &str) -> String {
    format!("/ecofilter-balancer:liveness/profile[name={}]", quote(name))
}

pub fn method() -> String {
    format!("{BALANCER}/balancing-method")
}
