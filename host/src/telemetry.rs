//! OpenTelemetry traces over OTLP/HTTP (protobuf), off unless configured:
//! `[telemetry] otlp_endpoint` in `toolhost.toml`, or the standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! variables (with `OTEL_SERVICE_NAME`, `OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` honoured).
//!
//! Spans are `tracing` spans at `info` on toolhost's own crates: a run (`run`)
//! and each model turn (`model_turn`), each tool call (with instantiation, the guest, and each
//! outbound request), each MCP request and each external MCP server call,
//! with the attributes an operator filters by (`tool`, `plugin`, `outcome`,
//! `fuel`, `memory_peak`, `http_requests`, `http_bytes`, `wall_ms`). Off,
//! no layer is interested in them and they cost a disabled call site each.

use anyhow::{Context, Result};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use serde::Deserialize;

/// `[telemetry]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL, e.g. `http://127.0.0.1:4318`
    /// (traces go to `/v1/traces` under it).
    pub otlp_endpoint: Option<String>,
    /// The `service.name` of the spans (default `toolhost`, or `OTEL_SERVICE_NAME`).
    pub service_name: Option<String>,
}

/// Flushes the spans not yet exported when dropped (at exit).
pub struct Telemetry {
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(err) = self.provider.shutdown() {
            eprintln!("toolhost: could not send the last traces: {err}");
        }
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.trim().is_empty())
}

impl TelemetryConfig {
    /// Whether traces are to be exported at all.
    fn enabled(&self) -> bool {
        let disabled = env("OTEL_SDK_DISABLED").is_some_and(|value| value.eq_ignore_ascii_case("true"))
            || env("OTEL_TRACES_EXPORTER").is_some_and(|value| value.eq_ignore_ascii_case("none"));
        let configured = self.otlp_endpoint.is_some()
            || env("OTEL_EXPORTER_OTLP_ENDPOINT").is_some()
            || env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some();
        configured && !disabled
    }

    /// The exporter and its `tracing` layer, when traces are configured.
    pub fn start<S>(&self) -> Result<Option<(Telemetry, impl tracing_subscriber::Layer<S>)>>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        if !self.enabled() {
            return Ok(None);
        }
        // reqwest is built without a default TLS crypto provider; install ring's once.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder().with_http();
        // The config's endpoint is a base URL, as OTEL_EXPORTER_OTLP_ENDPOINT is;
        // without it the exporter reads the standard variables itself.
        if let Some(base) = &self.otlp_endpoint
            && env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_none()
        {
            exporter = exporter.with_endpoint(format!("{}/v1/traces", base.trim_end_matches('/')));
        }
        let exporter = exporter.build().context("could not set up the OTLP trace exporter ([telemetry])")?;
        let service =
            self.service_name.clone().or_else(|| env("OTEL_SERVICE_NAME")).unwrap_or_else(|| "toolhost".to_owned());
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service)
            .with_attribute(opentelemetry::KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("toolhost");
        let layer = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(spans());
        Ok(Some((Telemetry { provider }, layer)))
    }
}

/// The spans exported: toolhost's own, at `info` and above.
fn spans() -> tracing_subscriber::filter::Targets {
    use tracing::level_filters::LevelFilter;
    tracing_subscriber::filter::Targets::new()
        .with_target("toolhost", LevelFilter::INFO)
        .with_target("toolhost_runtime", LevelFilter::INFO)
        .with_target("toolhost_catalog", LevelFilter::INFO)
        .with_target("toolhost_mcp", LevelFilter::INFO)
        .with_target("toolhost_mcp_client", LevelFilter::INFO)
        .with_target("toolhost_agent", LevelFilter::INFO)
}

use tracing_subscriber::Layer as _;
