//! Requests for OpenConfig paths (origin `openconfig`, or `/interfaces/...` without an
//! origin) go to the backend's interfaces ([`Backend::interfaces`]), answered by
//! efb-openconfig as the chip's own gNMI answers them: standard collectors read the box's
//! ports there, beside the balancer's model. One request serves one of the two; the
//! interfaces are read-only here (ports are configured in the balancer's model).

use std::sync::Arc;

use efb_openconfig::Source;
use gnmi_proto::gnmi::{Path, SetRequest};
use tonic::Status;

use crate::backend::Backend;

/// The interfaces, when every path of a request is an OpenConfig one; None when none is;
/// an error when they are mixed or the backend serves no interfaces.
pub(crate) fn route<'a>(
    backend: &dyn Backend,
    prefix: Option<&Path>,
    paths: impl IntoIterator<Item = Option<&'a Path>>,
) -> Result<Option<Arc<dyn Source>>, Status> {
    let kinds: Vec<bool> = paths
        .into_iter()
        .map(|p| efb_openconfig::is_openconfig(prefix, p))
        .collect();
    let any = kinds.iter().any(|k| *k)
        || (kinds.is_empty() && efb_openconfig::is_openconfig(prefix, None));
    if !any {
        return Ok(None);
    }
    if kinds.iter().any(|k| !*k) {
        return Err(Status::invalid_argument(
            "a request reads either OpenConfig interfaces (origin openconfig) or the \
             ecofilter-balancer model, not both: send two",
        ));
    }
    backend
        .interfaces()
        .map(Some)
        .ok_or_else(|| Status::unimplemented("this server serves no OpenConfig interfaces"))
}

/// Refuses a Set that touches OpenConfig paths, saying where ports are configured.
pub(crate) fn refuse_set(request: &SetRequest) -> Result<(), Status> {
    let prefix = request.prefix.as_ref();
    let paths = request
        .update
        .iter()
        .chain(&request.replace)
        .chain(&request.union_replace)
        .map(|u| u.path.as_ref())
        .chain(request.delete.iter().map(Some));
    for path in paths {
        if efb_openconfig::is_openconfig(prefix, path) {
            return Err(Status::invalid_argument(
                "OpenConfig interfaces are read-only on efbd: configure ports in the \
                 ecofilter-balancer model, e.g. /ports/port[name=p1]/enabled",
            ));
        }
    }
    Ok(())
}
