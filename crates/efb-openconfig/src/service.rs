//! The interfaces as a whole gNMI service (what efb-target serves beside P4Runtime, as a
//! Stratum switch does on the same port).

use std::pin::Pin;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use gnmi_proto::gnmi::g_nmi_server::GNmi;
use gnmi_proto::gnmi::{
    CapabilityRequest, CapabilityResponse, GetRequest, GetResponse, SetRequest, SetResponse,
    SubscribeRequest, SubscribeResponse,
};
use tonic::{Request, Response, Status, Streaming};

use crate::encode::Wire;
use crate::server::{self, Source};
use crate::subscribe;

pub struct InterfacesService {
    source: Arc<dyn Source>,
}

impl InterfacesService {
    pub fn new(source: Arc<dyn Source>) -> InterfacesService {
        InterfacesService { source }
    }
}

type SubscribeStream = Pin<Box<dyn Stream<Item = Result<SubscribeResponse, Status>> + Send>>;

#[tonic::async_trait]
impl GNmi for InterfacesService {
    async fn capabilities(
        &self,
        _request: Request<CapabilityRequest>,
    ) -> Result<Response<CapabilityResponse>, Status> {
        Ok(Response::new(CapabilityResponse {
            supported_models: server::models(),
            supported_encodings: Wire::all(),
            g_nmi_version: gnmi_proto::GNMI_VERSION.to_string(),
            extension: Vec::new(),
        }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        server::get(self.source.as_ref(), request.get_ref())
            .await
            .map(Response::new)
    }

    async fn set(&self, request: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
        server::set(self.source.as_ref(), request.get_ref())
            .await
            .map(Response::new)
    }

    type SubscribeStream = SubscribeStream;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let mut requests = request.into_inner();
        let first = match requests.next().await {
            Some(first) => first?,
            None => return Err(Status::invalid_argument("no SubscribeRequest came")),
        };
        let responses = subscribe::start(self.source.clone(), first, requests)?;
        Ok(Response::new(Box::pin(responses)))
    }
}
