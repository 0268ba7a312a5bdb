//! A small least-recently-used cache for parsed pages.

use std::collections::HashMap;
use std::hash::Hash;

/// A cache that forgets the least recently used entry first.
#[derive(Debug, Default)]
pub struct Lru<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    clock: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// Makes an empty cache holding at most `capacity` entries.
    pub fn new(capacity: usize) -> Self {
        Self { capacity, entries: HashMap::new(), clock: 0 }
    }

    /// Stores `value` under `key`, evicting the oldest entry when full.
    ///
    /// Returns the value the key held before, if any.
    #[inline]
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.clock += 1;
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&key) {
            let oldest = self.entries.iter().min_by_key(|(_, (_, t))| *t).map(|(k, _)| k.clone());

            if let Some(oldest) = oldest {
                self.entries.remove(&oldest);
            }
        }
        self.entries.insert(key, (value, self.clock)).map(|(v, _)| v)
    }
}

/// Counts the entries not used in the last `age` ticks.
#[must_use]
pub fn stale<K, V>(cache: &Lru<K, V>, age: u64) -> usize {
    let limit = cache.clock.saturating_sub(age);

    cache
        .entries
        .values()
        .filter(|(_, t)| *t < limit)
        .count()
}
