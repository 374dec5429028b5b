//! Trace context (W3C `traceparent`) for OpenTelemetry, which toolhost
//! exports only when it is configured (the facade's `telemetry`). Spans are
//! `tracing` spans; with no exporter they are disabled at their call sites
//! and these helpers find no context, so nothing is carried.

use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `traceparent` of the current span, when it is exported.
pub fn traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let span = span.span_context();
    span.is_valid().then(|| format!("00-{}-{}-{:02x}", span.trace_id(), span.span_id(), span.trace_flags().to_u8()))
}

/// Makes `span` a child of the remote span `traceparent` names (W3C Trace
/// Context, version 00); a malformed value is ignored.
pub fn continue_from(span: &tracing::Span, traceparent: &str) {
    let Some(remote) = parse(traceparent) else { return };
    let context = opentelemetry::Context::new().with_remote_span_context(remote);
    let _ = span.set_parent(context);
}

fn parse(traceparent: &str) -> Option<SpanContext> {
    let mut parts = traceparent.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if version != "00" || parts.next().is_some() || trace.len() != 32 || span.len() != 16 || flags.len() != 2 {
        return None;
    }
    let trace = TraceId::from_hex(trace).ok()?;
    let span = SpanId::from_hex(span).ok()?;
    let flags = TraceFlags::new(u8::from_str_radix(flags, 16).ok()?);
    let context = SpanContext::new(trace, span, flags, true, TraceState::default());
    context.is_valid().then_some(context)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_traceparent_is_read_only_when_well_formed() {
        let good = super::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
        assert_eq!(good.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert!(good.is_remote() && good.is_sampled());
        for bad in [
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-xyz-00f067aa0ba902b7-01",
        ] {
            assert!(super::parse(bad).is_none(), "{bad}");
        }
        // Without an exporter there is no context to carry.
        assert_eq!(super::traceparent(), None);
    }
}
