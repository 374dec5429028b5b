//! Per-call limits: what one call may consume before the host stops it.
//!
//! [`Limits`] is the resolved set used for a call; [`LimitOverrides`] is a
//! partial set as written in `toolhost.toml` (globally or per plugin) or given
//! on the command line. Sizes and durations are parsed here, once, from the
//! forms a person writes (`64MiB`, `1.5s`). The `http_*` limits bound what a
//! plugin granted network access may do in one call (see `grants::network`).

use serde::{Deserialize, Deserializer};
use std::fmt;
use std::time::Duration;

/// The limits one call runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Instructions (wasmtime fuel units) the call may execute.
    pub fuel: u64,
    /// Bytes of linear memory (all memories together) the instance may hold.
    pub memory: ByteSize,
    /// Wall-clock time from the start of instantiation to the result.
    pub timeout: Duration,
    /// Bytes of output text (or error text) the call may return.
    pub output: ByteSize,
    /// HTTP requests the call may send (refused ones are not counted).
    pub http_requests: u32,
    /// Bytes of HTTP response bodies the call may receive, all requests together.
    pub http_response: ByteSize,
    /// What happens to a response that would go over `http_response`.
    pub http_oversized: Oversized,
    /// Bytes of HTTP request bodies the call may send, all requests together.
    pub http_request_body: ByteSize,
    /// Time one HTTP request may take, from connecting to the end of its
    /// response body; never past the call's own `timeout`.
    pub http_timeout: Duration,
}

/// What to do with an HTTP response body that would go over the call's
/// `http_response` limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Oversized {
    /// The plugin's read fails with "HTTP response body size exceeds limit".
    #[default]
    Fail,
    /// The body ends at the limit, as if the server had sent no more.
    Cut,
}

impl Oversized {
    /// `fail` or `cut`.
    pub fn as_str(self) -> &'static str {
        match self {
            Oversized::Fail => "fail",
            Oversized::Cut => "cut",
        }
    }
}

impl std::str::FromStr for Oversized {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "fail" => Ok(Oversized::Fail),
            "cut" => Ok(Oversized::Cut),
            other => Err(format!(
                "`{other}` is not a choice for an oversized response: write `fail` (the plugin's read \
                 fails) or `cut` (the body ends at the limit)"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Oversized {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Limits {
    /// Instructions allowed by default: a couple of seconds of busy CPU.
    pub const DEFAULT_FUEL: u64 = 2_000_000_000;
    /// Memory allowed by default.
    pub const DEFAULT_MEMORY: ByteSize = ByteSize(128 << 20);
    /// Wall-clock time allowed by default.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Output allowed by default.
    pub const DEFAULT_OUTPUT: ByteSize = ByteSize(1 << 20);
    /// HTTP requests allowed per call by default.
    pub const DEFAULT_HTTP_REQUESTS: u32 = 16;
    /// HTTP response bytes allowed per call by default.
    pub const DEFAULT_HTTP_RESPONSE: ByteSize = ByteSize(8 << 20);
    /// HTTP request body bytes allowed per call by default.
    pub const DEFAULT_HTTP_REQUEST_BODY: ByteSize = ByteSize(1 << 20);
    /// Time allowed per HTTP request by default.
    pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(10);

    /// These limits with every value `overrides` sets replaced.
    pub fn with(mut self, overrides: &LimitOverrides) -> Limits {
        if let Some(fuel) = overrides.fuel {
            self.fuel = fuel;
        }
        if let Some(memory) = overrides.memory {
            self.memory = memory;
        }
        if let Some(timeout) = overrides.timeout {
            self.timeout = timeout.0;
        }
        if let Some(output) = overrides.output {
            self.output = output;
        }
        if let Some(requests) = overrides.http_requests {
            self.http_requests = requests;
        }
        if let Some(response) = overrides.http_response {
            self.http_response = response;
        }
        if let Some(oversized) = overrides.http_oversized {
            self.http_oversized = oversized;
        }
        if let Some(body) = overrides.http_request_body {
            self.http_request_body = body;
        }
        if let Some(timeout) = overrides.http_timeout {
            self.http_timeout = timeout.0;
        }
        self
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: Self::DEFAULT_FUEL,
            memory: Self::DEFAULT_MEMORY,
            timeout: Self::DEFAULT_TIMEOUT,
            output: Self::DEFAULT_OUTPUT,
            http_requests: Self::DEFAULT_HTTP_REQUESTS,
            http_response: Self::DEFAULT_HTTP_RESPONSE,
            http_oversized: Oversized::Fail,
            http_request_body: Self::DEFAULT_HTTP_REQUEST_BODY,
            http_timeout: Self::DEFAULT_HTTP_TIMEOUT,
        }
    }
}

/// Some limits, each one optional: a `[limits]` table or command-line flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitOverrides {
    /// Instructions, e.g. `fuel = 500_000_000`.
    pub fuel: Option<u64>,
    /// Memory, e.g. `memory = "64MiB"`.
    pub memory: Option<ByteSize>,
    /// Wall-clock time, e.g. `timeout = "5s"`.
    pub timeout: Option<HumanDuration>,
    /// Output size, e.g. `output = "256KiB"`.
    pub output: Option<ByteSize>,
    /// HTTP requests per call, e.g. `http_requests = 4`.
    pub http_requests: Option<u32>,
    /// HTTP response bytes per call, e.g. `http_response = "2MiB"`.
    pub http_response: Option<ByteSize>,
    /// `http_oversized = "cut"` or `"fail"`.
    pub http_oversized: Option<Oversized>,
    /// HTTP request body bytes per call, e.g. `http_request_body = "256KiB"`.
    pub http_request_body: Option<ByteSize>,
    /// Time per HTTP request, e.g. `http_timeout = "5s"`.
    pub http_timeout: Option<HumanDuration>,
}

impl LimitOverrides {
    /// `other`'s values where it sets them, ours elsewhere.
    pub fn then(mut self, other: &LimitOverrides) -> LimitOverrides {
        self.fuel = other.fuel.or(self.fuel);
        self.memory = other.memory.or(self.memory);
        self.timeout = other.timeout.or(self.timeout);
        self.output = other.output.or(self.output);
        self.http_requests = other.http_requests.or(self.http_requests);
        self.http_response = other.http_response.or(self.http_response);
        self.http_oversized = other.http_oversized.or(self.http_oversized);
        self.http_request_body = other.http_request_body.or(self.http_request_body);
        self.http_timeout = other.http_timeout.or(self.http_timeout);
        self
    }
}

/// A number of bytes, written as `65536`, `64KiB`, `64MiB`, `1GiB` or `10MB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl std::str::FromStr for ByteSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '_' || c == '.')).unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(split);
        let number: f64 = number.replace('_', "").parse().map_err(|_| size_help(text))?;
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kib" => 1 << 10,
            "m" | "mib" => 1 << 20,
            "g" | "gib" => 1 << 30,
            "kb" => 1_000,
            "mb" => 1_000_000,
            "gb" => 1_000_000_000,
            _ => return Err(size_help(text)),
        };
        let bytes = number * scale as f64;
        if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
            return Err(size_help(text));
        }
        Ok(ByteSize(bytes.round() as u64))
    }
}

fn size_help(text: &str) -> String {
    format!(
        "`{text}` is not a size: write a number of bytes with an optional unit, e.g. `65536`, `512KiB`, `64MiB` or `1GiB`"
    )
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        for (scale, unit) in UNITS {
            if self.0 >= scale {
                let value = self.0 as f64 / scale as f64;
                return if self.0.is_multiple_of(scale) {
                    write!(f, "{}{unit}", self.0 / scale)
                } else {
                    write!(f, "{value:.1}{unit}")
                };
            }
        }
        write!(f, "{}B", self.0)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        match Raw::deserialize(deserializer)? {
            Raw::Number(bytes) => Ok(ByteSize(bytes)),
            Raw::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// A duration written as `500ms`, `5s`, `1.5s`, `2m` or `1h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct HumanDuration(pub Duration);

impl std::str::FromStr for HumanDuration {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let split = trimmed.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_')).unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(split);
        let number: f64 = number.replace('_', "").parse().map_err(|_| duration_help(text))?;
        let seconds = match unit.trim() {
            "ms" => number / 1_000.0,
            "s" => number,
            "m" | "min" => number * 60.0,
            "h" => number * 3_600.0,
            _ => return Err(duration_help(text)),
        };
        if !seconds.is_finite() || seconds <= 0.0 || seconds > 86_400.0 * 365.0 {
            return Err(duration_help(text));
        }
        Ok(HumanDuration(Duration::from_secs_f64(seconds)))
    }
}

fn duration_help(text: &str) -> String {
    format!("`{text}` is not a duration: write a positive number with a unit, e.g. `500ms`, `5s`, `1.5s` or `2m`")
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let millis = self.0.as_millis();
        if millis.is_multiple_of(1_000) { write!(f, "{}s", millis / 1_000) } else { write!(f, "{millis}ms") }
    }
}

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// How much more than the `output` limit the host copies out of a guest in
/// any one transfer (its answer, a log record, a write) before it stops: an
/// answer larger than the limit plus this is never copied at all.
pub const TRANSFER_SLACK: u64 = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_sizes() {
        let cases = [
            ("65536", 65_536),
            ("64KiB", 64 << 10),
            ("64k", 64 << 10),
            ("64MiB", 64 << 20),
            ("64 MiB", 64 << 20),
            ("1GiB", 1 << 30),
            ("1.5MiB", 3 << 19),
            ("10MB", 10_000_000),
            ("1_000", 1_000),
        ];
        for (text, bytes) in cases {
            assert_eq!(text.parse::<ByteSize>(), Ok(ByteSize(bytes)), "{text}");
        }
    }

    #[test]
    fn rejects_sizes() {
        for text in ["", "MiB", "64XB", "-1MiB", "lots", "1e400"] {
            let err = text.parse::<ByteSize>().unwrap_err();
            assert!(err.contains("e.g. `65536`"), "{text}: {err}");
        }
    }

    #[test]
    fn accepts_durations() {
        let cases = [
            ("500ms", Duration::from_millis(500)),
            ("5s", Duration::from_secs(5)),
            ("1.5s", Duration::from_millis(1_500)),
            ("2m", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3_600)),
        ];
        for (text, duration) in cases {
            assert_eq!(text.parse::<HumanDuration>(), Ok(HumanDuration(duration)), "{text}");
        }
    }

    #[test]
    fn rejects_durations() {
        for text in ["5", "0s", "-1s", "soon", "5 parsecs", ""] {
            let err = text.parse::<HumanDuration>().unwrap_err();
            assert!(err.contains("e.g. `500ms`"), "{text}: {err}");
        }
    }

    #[test]
    fn accepts_oversized_choices() {
        assert_eq!("cut".parse::<Oversized>(), Ok(Oversized::Cut));
        assert_eq!("fail".parse::<Oversized>(), Ok(Oversized::Fail));
    }

    #[test]
    fn rejects_oversized_choices_naming_the_accepted_ones() {
        let err = "truncate".parse::<Oversized>().unwrap_err();
        assert!(err.contains("`fail`") && err.contains("`cut`"), "{err}");
    }

    #[test]
    fn displays_sizes_as_written() {
        assert_eq!(ByteSize(64 << 20).to_string(), "64MiB");
        assert_eq!(ByteSize(1536 << 10).to_string(), "1.5MiB");
        assert_eq!(ByteSize(100).to_string(), "100B");
    }

    #[test]
    fn overrides_apply_in_order() {
        let global = LimitOverrides { fuel: Some(10), memory: Some(ByteSize(1)), ..Default::default() };
        let plugin = LimitOverrides { fuel: Some(20), ..Default::default() };
        let limits = Limits::default().with(&global.then(&plugin));
        assert_eq!(limits.fuel, 20);
        assert_eq!(limits.memory, ByteSize(1));
        assert_eq!(limits.timeout, Limits::DEFAULT_TIMEOUT);
    }
}
