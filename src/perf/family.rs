//! The exchange's address family. perftest's exchange (its TCP channel, and RDMA CM with `-R`)
//! is IPv4 unless both sides are given `--ipv6-addr`; the server's name, `--source_ip` and
//! the addresses RDMA CM listens on all follow it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use crate::error::{Error, Result};

/// IPv4 (perftest's default) or IPv6 (`--ipv6-addr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `AF_INET`, perftest's default.
    V4,
    /// `AF_INET6`, with `--ipv6-addr`.
    V6,
}

impl Family {
    /// The family `--ipv6-addr` asks for.
    pub fn from_flag(ipv6_addr: bool) -> Family {
        if ipv6_addr {
            Family::V6
        } else {
            Family::V4
        }
    }

    /// "IPv4" or "IPv6", as messages say it.
    pub fn name(self) -> &'static str {
        match self {
            Family::V4 => "IPv4",
            Family::V6 => "IPv6",
        }
    }

    /// Every address of the family: where a server listens without `--source_ip`. An IPv6
    /// listener on `::` takes IPv4 clients too, as Linux's IPv6 sockets do by default.
    pub fn unspecified(self) -> IpAddr {
        match self {
            Family::V4 => Ipv4Addr::UNSPECIFIED.into(),
            Family::V6 => Ipv6Addr::UNSPECIFIED.into(),
        }
    }

    /// Whether `ip` is of this family.
    pub fn holds(self, ip: &IpAddr) -> bool {
        ip.is_ipv6() == (self == Family::V6)
    }

    /// What to tell a user whose address is of the other family.
    fn switch(self) -> &'static str {
        match self {
            Family::V4 => "give both sides --ipv6-addr for an exchange over IPv6",
            Family::V6 => "--ipv6-addr makes the exchange IPv6: drop it on both sides for IPv4",
        }
    }

    /// `--source_ip IP`: an address of this family.
    pub fn parse_source(self, ip: &str) -> Result<IpAddr> {
        let parsed: IpAddr = ip
            .parse()
            .map_err(|_| Error::config(format!("--source_ip {ip:?}: not an IP address")))?;
        if !self.holds(&parsed) {
            let other = if parsed.is_ipv6() { "IPv6" } else { "IPv4" };
            return Err(Error::config(format!(
                "--source_ip {ip}: an {other} address, and the exchange is {} ({})",
                self.name(),
                self.switch()
            )));
        }
        Ok(parsed)
    }

    /// The first address of this family that `host` resolves to, with `port`. A literal of
    /// the other family is refused by name, as is a name with no address of this family.
    pub fn resolve(self, host: &str, port: u16) -> Result<SocketAddr> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            if !self.holds(&ip) {
                return Err(Error::config(format!(
                    "server {host}: an {} address, and the exchange is {} ({})",
                    if ip.is_ipv6() { "IPv6" } else { "IPv4" },
                    self.name(),
                    self.switch()
                )));
            }
            return Ok(SocketAddr::new(ip, port));
        }
        (host, port)
            .to_socket_addrs()
            .map_err(|e| Error::config(format!("cannot resolve server {host:?}: {e}")))?
            .find(|a| self.holds(&a.ip()))
            .ok_or_else(|| {
                Error::config(format!(
                    "server {host:?} has no {} address ({})",
                    self.name(),
                    self.switch()
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_of_the_other_family_is_refused_naming_the_flag() {
        let e = Family::V4.resolve("2001:db8::1", 18515).unwrap_err();
        assert!(e.to_string().contains("--ipv6-addr"), "{e}");
        let e = Family::V6.resolve("192.0.2.1", 18515).unwrap_err();
        assert!(e.to_string().contains("drop it"), "{e}");
        assert_eq!(
            Family::V6.resolve("2001:db8::1", 7).unwrap(),
            "[2001:db8::1]:7".parse().unwrap()
        );
        assert_eq!(
            Family::V4.resolve("localhost", 7).unwrap(),
            "127.0.0.1:7".parse().unwrap()
        );
    }

    #[test]
    fn a_source_address_must_be_of_the_exchange_family() {
        assert!(Family::V4
            .parse_source("::1")
            .unwrap_err()
            .to_string()
            .contains("--ipv6-addr"));
        assert!(Family::V4
            .parse_source("nope")
            .unwrap_err()
            .to_string()
            .contains("not an IP"));
        assert_eq!(
            Family::V6.parse_source("::1").unwrap(),
            IpAddr::from(Ipv6Addr::LOCALHOST)
        );
    }
}
