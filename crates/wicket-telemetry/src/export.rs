//! Sending: the OTLP/HTTP protobuf exporters of `opentelemetry-otlp`,
//! through Wicket's own reqwest on a runtime of telemetry's own (the SDK's
//! batching thread waits on a future that runs there), with failed
//! exports counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, SpanData, SpanExporter,
};

use crate::Error;

/// How often the metrics are sent.
const METRICS_EVERY: Duration = Duration::from_secs(10);

/// An HTTP client whose requests run on telemetry's runtime, whatever
/// executor awaits them.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Client {
    pub(crate) fn new(
        runtime: tokio::runtime::Handle,
        timeout: Duration,
    ) -> reqwest::Result<Client> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .build()?;
        Ok(Client { client, runtime })
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = bounded_body(response).await?;
            Ok::<_, reqwest::Error>((status, headers, body))
        });
        let (status, headers, body) = sent.await??;
        let mut response = Response::builder().status(status);
        if let Some(all) = response.headers_mut() {
            *all = headers;
        }
        Ok(response.body(body)?)
    }
}

/// The most of a collector's response body that is read: an OTLP answer
/// is a small message (a partial success at most); a collector that sends
/// more, or sends forever, costs no memory past this.
pub(crate) const RESPONSE_MAX_BYTES: usize = 64 * 1024;

/// The response's body, read to [`RESPONSE_MAX_BYTES`] at most; the rest
/// is never read (the connection is dropped with it).
async fn bounded_body(mut response: reqwest::Response) -> Result<Bytes, reqwest::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = RESPONSE_MAX_BYTES - body.len();
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() == RESPONSE_MAX_BYTES {
            break;
        }
    }
    Ok(Bytes::from(body))
}

/// The service as the collector sees it: `OTEL_SERVICE_NAME` (or a
/// `service.name` in `OTEL_RESOURCE_ATTRIBUTES`), else `wicket`.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|name| !name.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES")
            .is_ok_and(|attributes| attributes.contains("service.name="));
    let builder = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    if named {
        builder.build()
    } else {
        builder.with_service_name("wicket").build()
    }
}

fn built(what: &str, error: impl std::fmt::Display) -> Error {
    Error(format!("the {what} exporter could not be made: {error}"))
}

/// Traces to `BASE/v1/traces`, batched; spans of a failed export counted
/// in `dropped`.
pub(crate) fn tracer_provider(
    base: &str,
    client: Client,
    dropped: Arc<AtomicU64>,
) -> Result<SdkTracerProvider, Error> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/traces"))
        .build()
        .map_err(|error| built("trace", error))?;
    let processor = BatchSpanProcessor::builder(Counted { exporter, dropped })
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(crate::SPAN_QUEUE)
                .with_scheduled_delay(Duration::from_secs(1))
                .build(),
        )
        .build();
    Ok(SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource())
        .build())
}

/// Metrics to `BASE/v1/metrics`, every [`METRICS_EVERY`] and at shutdown.
pub(crate) fn meter_provider(base: &str, client: Client) -> Result<SdkMeterProvider, Error> {
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(format!("{base}/v1/metrics"))
        .build()
        .map_err(|error| built("metric", error))?;
    let reader = PeriodicReader::builder(exporter)
        .with_interval(METRICS_EVERY)
        .build();
    Ok(SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource())
        .build())
}

/// The OTLP exporter, counting the spans of each export that failed.
#[derive(Debug)]
struct Counted {
    exporter: opentelemetry_otlp::SpanExporter,
    dropped: Arc<AtomicU64>,
}

impl SpanExporter for Counted {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let count = batch.len() as u64;
        let result = self.exporter.export(batch).await;
        if result.is_err() {
            self.dropped.fetch_add(count, Ordering::Relaxed);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.exporter.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.exporter.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.exporter.set_resource(resource);
    }
}
