//! A set of disjoint half-open `u64` ranges kept sorted and merged: received packet numbers,
//! received and acknowledged stream bytes. Insertion is a binary search plus a small shift;
//! in-order insertion (the common case) is an O(1) append or extension.

/// Disjoint, sorted, merged half-open ranges `[start, end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    r: Vec<(u64, u64)>,
}

impl RangeSet {
    /// An empty set.
    pub(crate) fn new() -> RangeSet {
        RangeSet { r: Vec::new() }
    }

    /// Adds `[start, end)`; returns how many values were new.
    pub(crate) fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        // Fast path: extends or follows the last range.
        if let Some(last) = self.r.last_mut() {
            if start >= last.0 {
                if start <= last.1 {
                    let added = end.saturating_sub(last.1);
                    last.1 = last.1.max(end);
                    return added;
                }
                self.r.push((start, end));
                return end - start;
            }
        } else {
            self.r.push((start, end));
            return end - start;
        }
        // First range whose end reaches start.
        let i = self.r.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        let mut covered = 0u64;
        while j < self.r.len() && self.r[j].0 <= end {
            let (a, b) = self.r[j];
            covered += b.min(end).saturating_sub(a.max(start));
            s = s.min(a);
            e = e.max(b);
            j += 1;
        }
        self.r.splice(i..j, std::iter::once((s, e)));
        (end - start) - covered
    }

    /// Whether `v` is in the set.
    pub(crate) fn contains(&self, v: u64) -> bool {
        let i = self.r.partition_point(|&(_, e)| e <= v);
        self.r.get(i).is_some_and(|&(s, _)| s <= v)
    }

    /// End of the range starting at `from` (the contiguous prefix when `from` is its start), or
    /// `from` if `from` is not covered.
    pub(crate) fn contiguous_end(&self, from: u64) -> u64 {
        let i = self.r.partition_point(|&(_, e)| e <= from);
        match self.r.get(i) {
            Some(&(s, e)) if s <= from => e,
            _ => from,
        }
    }

    /// The first gap in `[start, end)`: the first sub-range not in the set, if any.
    pub(crate) fn first_gap(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let mut at = start;
        let i = self.r.partition_point(|&(_, e)| e <= at);
        for &(s, e) in &self.r[i..] {
            if at >= end {
                return None;
            }
            if s > at {
                return Some((at, s.min(end)));
            }
            at = at.max(e);
        }
        (at < end).then_some((at, end))
    }

    /// Removes everything below `v`.
    pub(crate) fn remove_below(&mut self, v: u64) {
        let i = self.r.partition_point(|&(_, e)| e <= v);
        self.r.drain(..i);
        if let Some(first) = self.r.first_mut() {
            first.0 = first.0.max(v);
        }
    }

    /// Drops the lowest ranges until at most `n` remain.
    pub(crate) fn keep_highest(&mut self, n: usize) {
        if self.r.len() > n {
            let extra = self.r.len() - n;
            self.r.drain(..extra);
        }
    }

    /// Ranges, ascending.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &(u64, u64)> {
        self.r.iter()
    }

    /// Number of ranges.
    pub(crate) fn len(&self) -> usize {
        self.r.len()
    }

    /// Largest value + 1, if any.
    pub(crate) fn max_end(&self) -> Option<u64> {
        self.r.last().map(|&(_, e)| e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_merge_and_count_new_values() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(10, 20), 10);
        assert_eq!(s.insert(30, 40), 10);
        assert_eq!(s.insert(0, 5), 5);
        assert_eq!(s.insert(15, 35), 10);
        assert_eq!(
            s.iter().copied().collect::<Vec<_>>(),
            vec![(0, 5), (10, 40)]
        );
        assert_eq!(s.insert(5, 10), 5);
        assert_eq!(s.len(), 1);
        assert_eq!(s.contiguous_end(0), 40);
        assert!(s.contains(39) && !s.contains(40));
        s.insert(50, 60);
        assert_eq!(s.first_gap(0, 70), Some((40, 50)));
        assert_eq!(s.first_gap(50, 60), None);
        s.remove_below(55);
        assert_eq!(s.iter().copied().collect::<Vec<_>>(), vec![(55, 60)]);
    }
}
