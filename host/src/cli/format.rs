//! Small helpers for human-readable output.

use std::time::Duration;
use toolhost::{Grants, Manifest};

/// What a plugin asks for and what it is granted, as aligned lines:
/// `asks     http https://*` then `granted  nothing`.
pub fn grants(asks: Option<&Manifest>, grants: &Grants) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(asks) = asks {
        let described = asks.describe();
        if described.is_empty() {
            lines.push("asks     nothing".to_owned());
        }
        for (i, (kind, items)) in described.iter().enumerate() {
            let label = if i == 0 { "asks   " } else { "       " };
            lines.push(format!("{label}  {kind} {items}"));
        }
    }
    let described = grants.describe();
    if described.is_empty() {
        lines.push("granted  nothing".to_owned());
    }
    for (i, (kind, items)) in described.iter().enumerate() {
        let label = if i == 0 { "granted" } else { "       " };
        lines.push(format!("{label}  {kind} {items}"));
    }
    lines
}

/// `1234567` → `1,234,567`.
pub fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A duration as `412µs`, `3.2ms` or `1.50s`.
pub fn duration(duration: Duration) -> String {
    let micros = duration.as_micros();
    if micros < 1_000 {
        format!("{micros}µs")
    } else if micros < 1_000_000 {
        format!("{:.1}ms", micros as f64 / 1_000.0)
    } else {
        format!("{:.2}s", duration.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn shows_durations() {
        assert_eq!(duration(Duration::from_micros(412)), "412µs");
        assert_eq!(duration(Duration::from_micros(3_200)), "3.2ms");
        assert_eq!(duration(Duration::from_millis(1_500)), "1.50s");
    }
}
