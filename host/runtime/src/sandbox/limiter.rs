//! A call's memory bound: linear memory summed over the instance's memories,
//! refused past the limit, with the peak recorded for the call's usage.

use wasmtime::ResourceLimiter;

/// Bounds linear memory, summed over the instance's memories, and records the peak.
pub(crate) struct MemoryLimiter {
    limit: u64,
    total: u64,
    /// The most memory the instance held at once.
    pub(crate) peak: u64,
    /// The size a refused grow asked for: the real cause of the trap that follows.
    pub(crate) refused: Option<u64>,
}

impl MemoryLimiter {
    pub(crate) fn new(limit: u64) -> MemoryLimiter {
        MemoryLimiter { limit, total: 0, peak: 0, refused: None }
    }
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let after = self.total - current as u64 + desired as u64;
        if after > self.limit {
            self.refused = Some(after);
            return Ok(false);
        }
        self.total = after;
        self.peak = self.peak.max(after);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        // Tables hold function references; a million is far beyond any real plugin.
        Ok(desired <= 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_limiter_sums_memories_and_refuses_past_the_limit() {
        let mut limiter = MemoryLimiter::new(100);
        assert!(limiter.memory_growing(0, 60, None).unwrap());
        assert!(limiter.memory_growing(0, 30, None).unwrap());
        assert!(!limiter.memory_growing(30, 50, None).unwrap());
        assert_eq!(limiter.refused, Some(110));
        assert_eq!(limiter.peak, 90);
    }
}
