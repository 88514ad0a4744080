//! The start policy: which waiting requests start this frame. Pure functions.

/// A waiting request's priority after ageing: its own, plus one point per `ageing_frames`
/// frames waited, so nothing starves.
pub(crate) fn aged_priority(priority: i32, enqueued: u64, frame: u64, ageing_frames: u32) -> i64 {
    priority as i64 + (frame.saturating_sub(enqueued) / ageing_frames.max(1) as u64) as i64
}

/// Removes up to `n` items from `waiting` and returns them in start order: highest aged priority
/// first, lowest ticket (first come) among equals. `key` gives an item's (aged priority,
/// ticket). The rest stay in `waiting`, in no particular order (but the same on every run).
///
/// The pick works on a list of keys, not on the items: a waiting job is a few hundred bytes,
/// and selecting among thousands of them moved more memory than it compared.
pub(crate) fn take_starts<T>(
    waiting: &mut Vec<T>,
    n: usize,
    key: impl Fn(&T) -> (i64, u64),
) -> Vec<T> {
    let take = n.min(waiting.len());
    if take == 0 {
        return Vec::new();
    }
    // Highest priority first, then lowest ticket, then (for a total order) first in the list.
    let mut keys: Vec<(i64, u64, usize)> = waiting
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let (priority, ticket) = key(item);
            (-priority, ticket, i)
        })
        .collect();
    if take < keys.len() {
        keys.select_nth_unstable(take - 1);
        keys.truncate(take);
    }
    // Out of the list from the back, so a swap never moves a picked item.
    keys.sort_unstable_by_key(|&(.., i)| std::cmp::Reverse(i));
    let mut starting: Vec<((i64, u64, usize), T)> = keys
        .into_iter()
        .map(|k| (k, waiting.swap_remove(k.2)))
        .collect();
    starting.sort_unstable_by_key(|&(k, _)| k);
    starting.into_iter().map(|(_, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (priority, enqueued frame, ticket)
    fn start(waiting: &mut Vec<(i32, u64, u64)>, n: usize, frame: u64) -> Vec<u64> {
        take_starts(waiting, n, |&(p, e, t)| (aged_priority(p, e, frame, 10), t))
            .into_iter()
            .map(|(_, _, t)| t)
            .collect()
    }

    #[test]
    fn higher_priority_first_then_first_come() {
        let mut w = vec![(0, 0, 1), (5, 0, 2), (0, 0, 3), (5, 0, 4), (1, 0, 5)];
        assert_eq!(start(&mut w, 3, 0), vec![2, 4, 5]);
        let mut left: Vec<u64> = w.iter().map(|j| j.2).collect();
        left.sort();
        assert_eq!(left, vec![1, 3]);
        assert_eq!(start(&mut w, 10, 0), vec![1, 3]);
        assert!(w.is_empty());
    }

    #[test]
    fn waiting_requests_age_past_newer_higher_ones() {
        // Ticket 1 waited 50 frames (5 points); ticket 2, priority 3, just came.
        let mut w = vec![(0, 0, 1), (3, 50, 2)];
        assert_eq!(start(&mut w, 1, 50), vec![1]);
        // Ageing never lowers a priority, even for a frame counter behind the enqueue frame.
        assert_eq!(aged_priority(4, 10, 5, 10), 4);
        // A zero ageing period counts as one frame.
        assert_eq!(aged_priority(0, 0, 7, 0), 7);
    }

    #[test]
    fn nothing_to_start() {
        let mut w: Vec<(i32, u64, u64)> = vec![(0, 0, 1)];
        assert!(start(&mut w, 0, 0).is_empty());
        assert_eq!(w.len(), 1);
        let mut empty: Vec<(i32, u64, u64)> = Vec::new();
        assert!(start(&mut empty, 4, 0).is_empty());
    }
}
