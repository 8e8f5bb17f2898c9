//! The source GID of a RoCE port when none is given, picked as perftest picks it: an
//! IPv4-mapped GID first (an IPv6 one with perftest's `--ipv6`), then a global (not link-local)
//! one, then RoCE v2 over v1; the lowest index of the best. A pick other than a RoCE v2 GID of
//! the wanted family is said, with why.

use super::device::{Context, Gid};

/// perftest's weights: each exceeds all the lower criteria together.
const FAMILY: u32 = 100;
const GLOBAL: u32 = 10;

/// The GID picked, and what to tell the user when it is not a RoCE v2 IPv4 one.
pub(crate) struct GidPick {
    pub index: u32,
    pub note: Option<String>,
}

impl Gid {
    /// True for link-local addresses: fe80::/10, or IPv4-mapped 169.254.0.0/16.
    pub fn is_link_local(&self) -> bool {
        match self.ipv4() {
            Some(ip) => ip.is_link_local(),
            None => self.0[0] == 0xfe && self.0[1] & 0xc0 == 0x80,
        }
    }

    /// The IP address a RoCE GID is (an IPv4-mapped one as IPv4), when it is one a peer can
    /// name: not empty, not link-local. Only a RoCE GID is an IP address; an InfiniBand GID
    /// is a subnet prefix and a port GUID.
    pub fn ip_address(&self) -> Option<std::net::IpAddr> {
        if *self == Gid::default() || self.is_link_local() {
            return None;
        }
        Some(match self.ipv4() {
            Some(v4) => v4.into(),
            None => std::net::Ipv6Addr::from(self.0).into(),
        })
    }
}

fn score(gid: &Gid, kind: Option<&str>, prefer_ipv6: bool) -> u32 {
    let mut s = 0;
    if gid.ipv4().is_some() != prefer_ipv6 {
        s += FAMILY;
    }
    if !gid.is_link_local() {
        s += GLOBAL;
    }
    s + match kind {
        Some("RoCE v2") => 2,
        Some(_) => 1,
        None => 0,
    }
}

/// The best of `port`'s `table_len` GIDs (empty entries skipped), or None when all are empty;
/// IPv6 ones first with `prefer_ipv6`.
pub(crate) fn pick_gid(
    ctx: &Context,
    port: u8,
    table_len: u32,
    prefer_ipv6: bool,
) -> Option<GidPick> {
    let mut best: Option<(u32, u32, Gid, Option<String>)> = None;
    for i in 0..table_len {
        let Ok(gid) = ctx.gid(port, i) else { continue };
        if gid == Gid::default() {
            continue;
        }
        let kind = ctx.gid_type(port, i);
        let s = score(&gid, kind.as_deref(), prefer_ipv6);
        if best.as_ref().is_none_or(|b| s > b.0) {
            best = Some((s, i, gid, kind));
        }
    }
    let (_, index, gid, kind) = best?;
    let kind = kind.unwrap_or_else(|| "of unknown type".into());
    let family = if prefer_ipv6 { "IPv6" } else { "IPv4-mapped" };
    let note = ((gid.ipv4().is_some() == prefer_ipv6) || kind != "RoCE v2").then(|| {
        let why = match (gid.ipv4().is_some(), prefer_ipv6) {
            (false, false) => "the port has no IPv4 address",
            (true, true) => "the port has no IPv6 address",
            _ => "the port has no RoCE v2 GID",
        };
        let scope = if gid.is_link_local() {
            ", link-local"
        } else {
            ""
        };
        format!(
            "{}:{port} has no RoCE v2 {family} GID ({why}): using GID index {index}, {gid} \
             ({kind}{scope}), as perftest would pick; its peers need a GID of the same kind \
             (--gid-index / -x choose another)",
            ctx.name()
        )
    });
    Some(GidPick { index, note })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gid(s: &str) -> Gid {
        let ip: std::net::Ipv6Addr = s.parse().unwrap();
        Gid(ip.octets())
    }

    #[test]
    fn scores_rank_family_then_scope_then_version() {
        let v4 = gid("::ffff:192.0.2.1");
        let v4_ll = gid("::ffff:169.254.1.1");
        let v6 = gid("2001:db8::1");
        let v6_ll = gid("fe80::1");
        assert!(v4_ll.is_link_local() && v6_ll.is_link_local());
        assert!(!v4.is_link_local() && !v6.is_link_local());
        let v2 = Some("RoCE v2");
        let v1 = Some("IB/RoCE v1");
        let sc = |g: &Gid, k| score(g, k, false);
        assert!(sc(&v4, v1) > sc(&v6, v2));
        assert!(sc(&v4_ll, v1) > sc(&v6, v2));
        assert!(sc(&v6, v1) > sc(&v6_ll, v2));
        assert!(sc(&v6_ll, v2) > sc(&v6_ll, v1));
        // perftest's --ipv6: the family preference turns round, the rest stays.
        let v6_first = |g: &Gid, k| score(g, k, true);
        assert!(v6_first(&v6_ll, v1) > v6_first(&v4, v2));
        assert!(v6_first(&v6, v1) > v6_first(&v6_ll, v2));
    }
}
