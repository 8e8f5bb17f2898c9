//! The payload every echo request carries: its tag (non-zero: the client's id and a sequence
//! number) in every 8-byte word, the last word included, so that a server polling the last word
//! sees the request complete and a client can tell its own request in a reply.

/// Tag of request `seq` of client `client`: never zero.
#[inline(always)]
pub fn tag(client: usize, seq: u64) -> u64 {
    ((client as u64 + 1) << 40) | (seq & ((1 << 40) - 1))
}

/// The client a tag names.
#[inline(always)]
pub fn client_of(tag: u64) -> usize {
    ((tag >> 40) as usize).wrapping_sub(1)
}

/// Fills `buf` with `tag`'s bytes, word after word (a last partial word gets the low bytes).
#[inline]
pub fn fill(buf: &mut [u8], tag: u64) {
    let bytes = tag.to_le_bytes();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = bytes[i % 8];
    }
}

/// The tag `buf` carries if every byte matches one tag (its first word), else `None`.
#[inline]
pub fn tag_in(buf: &[u8]) -> Option<u64> {
    if buf.len() < 8 {
        return None;
    }
    let t = u64::from_le_bytes(buf[..8].try_into().ok()?);
    let bytes = t.to_le_bytes();
    (t != 0 && buf.iter().enumerate().all(|(i, b)| *b == bytes[i % 8])).then_some(t)
}

/// Requests a client has out, by tag: a reply must carry one of them, once.
#[derive(Debug, Default)]
pub struct Outstanding {
    tags: Vec<u64>,
}

impl Outstanding {
    /// Room for `window` requests.
    pub fn new(window: usize) -> Self {
        Outstanding {
            tags: Vec::with_capacity(window),
        }
    }
    /// A request went out.
    #[inline]
    pub fn add(&mut self, tag: u64) {
        self.tags.push(tag);
    }
    /// A reply carrying `tag` came back: true if it answered an outstanding request.
    #[inline]
    pub fn answer(&mut self, tag: u64) -> bool {
        match self.tags.iter().position(|&t| t == tag) {
            Some(i) => {
                self.tags.swap_remove(i);
                true
            }
            None => false,
        }
    }
    /// Requests still out.
    pub fn len(&self) -> usize {
        self.tags.len()
    }
    /// None out.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filled_buffer_gives_its_tag_back_and_a_changed_byte_does_not() {
        let t = tag(3, 77);
        assert_eq!(client_of(t), 3);
        let mut b = [0u8; 28];
        fill(&mut b, t);
        assert_eq!(tag_in(&b), Some(t));
        b[27] ^= 1;
        assert_eq!(tag_in(&b), None);
        assert_eq!(tag_in(&[0u8; 16]), None);
    }

    #[test]
    fn outstanding_answers_each_tag_once() {
        let mut o = Outstanding::new(4);
        o.add(5);
        o.add(6);
        assert!(o.answer(6));
        assert!(!o.answer(6));
        assert_eq!(o.len(), 1);
    }
}
