//! A client's requests in flight, by (worker, window slot): which slot and sequence number the
//! next request to a worker takes, and which request a reply answers.

/// A request in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pending {
    /// A PUT (else a GET).
    pub put: bool,
    /// Key index.
    pub key: u32,
    /// PUT: the version it wrote; GET of an owned key: the version it must find.
    pub version: u32,
}

/// The book of one client.
#[derive(Debug)]
pub struct RequestBook {
    window: usize,
    /// Next window slot per worker.
    slot: Vec<usize>,
    /// Requests sent per worker: the next one's number is this + 1 (the check word's).
    sent: Vec<u16>,
    /// By worker × window + slot.
    live: Vec<Option<Pending>>,
}

impl RequestBook {
    /// Nothing in flight to any of `workers` workers, `window` slots each.
    pub fn new(workers: usize, window: usize) -> Self {
        RequestBook {
            window,
            slot: vec![0; workers],
            sent: vec![0; workers],
            live: vec![None; workers * window],
        }
    }

    /// The (slot, sequence number) the next request to worker `w` takes, or `None` while that
    /// slot's previous request is unanswered: the worker has taken it (it answered a later one,
    /// and serves a client's slots in order), but its reply was overtaken by a later reply over
    /// another UD QP and is still on its way.
    #[inline]
    pub fn next(&self, w: usize) -> Option<(usize, u16)> {
        let s = self.slot[w];
        self.live[w * self.window + s]
            .is_none()
            .then(|| (s, self.sent[w].wrapping_add(1)))
    }

    /// Records request `p` as sent to worker `w` in the slot [`next`](Self::next) gave.
    #[inline]
    pub fn sent(&mut self, w: usize, p: Pending) {
        let s = self.slot[w];
        debug_assert!(self.live[w * self.window + s].is_none());
        self.live[w * self.window + s] = Some(p);
        self.sent[w] = self.sent[w].wrapping_add(1);
        self.slot[w] = if s + 1 == self.window { 0 } else { s + 1 };
    }

    /// The request worker `w`'s reply for slot `s` answers, now no longer in flight; `None` if
    /// no request is in flight there.
    #[inline]
    pub fn answer(&mut self, w: usize, s: usize) -> Option<Pending> {
        if s >= self.window {
            return None;
        }
        self.live.get_mut(w * self.window + s)?.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: u32) -> Pending {
        Pending {
            put: false,
            key,
            version: 0,
        }
    }

    #[test]
    fn slots_and_sequence_numbers_follow_the_worker_side() {
        let mut b = RequestBook::new(2, 2);
        assert_eq!(b.next(1), Some((0, 1)));
        b.sent(1, req(10));
        assert_eq!(b.next(1), Some((1, 2)));
        b.sent(1, req(11));
        assert_eq!(b.next(0), Some((0, 1)));
        assert_eq!(b.answer(1, 0), Some(req(10)));
        assert_eq!(b.next(1), Some((0, 3)));
    }

    #[test]
    fn a_slot_whose_reply_was_overtaken_waits_for_it() {
        let mut b = RequestBook::new(1, 2);
        b.sent(0, req(1));
        b.sent(0, req(2));
        // The reply to slot 1 arrives first: slot 0 is still in flight, so the next request
        // (which would take slot 0) must wait.
        assert_eq!(b.answer(0, 1), Some(req(2)));
        assert_eq!(b.next(0), None);
        assert_eq!(b.answer(0, 0), Some(req(1)));
        assert_eq!(b.next(0), Some((0, 3)));
    }

    #[test]
    fn a_reply_for_nothing_in_flight_is_none() {
        let mut b = RequestBook::new(2, 4);
        assert_eq!(b.answer(0, 0), None);
        assert_eq!(b.answer(0, 4), None);
        assert_eq!(b.answer(5, 0), None);
        b.sent(0, req(3));
        assert_eq!(b.answer(0, 0), Some(req(3)));
        assert_eq!(b.answer(0, 0), None);
    }

    #[test]
    fn sequence_numbers_wrap_like_the_workers() {
        let mut b = RequestBook::new(1, 1);
        for _ in 0..65535 {
            b.sent(0, req(0));
            b.answer(0, 0);
        }
        assert_eq!(b.next(0), Some((0, 0)));
        b.sent(0, req(0));
        b.answer(0, 0);
        assert_eq!(b.next(0), Some((0, 1)));
    }
}
