//! Names resolved by Wicket itself, once, before the decision: the
//! connection then goes to one of exactly these addresses, so a second
//! DNS answer cannot move it somewhere the card did not show. And which
//! addresses are local: loopback, private and the like, which a rule for
//! some other name must never open.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};

use crate::host::Host;

/// The addresses Wicket resolved a host to (the literal itself for an IP),
/// in the resolver's order, and whether any of them is local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Where the connection may go, tried in this order. Never empty.
    pub addresses: Vec<SocketAddr>,
    /// Whether any address is not a global unicast one ([`is_local`]).
    pub local: bool,
}

impl Resolved {
    /// The given addresses, duplicates dropped, with `local` worked out.
    pub fn new(addresses: impl IntoIterator<Item = SocketAddr>) -> Self {
        let mut kept: Vec<SocketAddr> = Vec::new();
        for address in addresses {
            if !kept.contains(&address) {
                kept.push(address);
            }
        }
        let local = kept.iter().any(|address| is_local(address.ip()));
        Self {
            addresses: kept,
            local,
        }
    }
}

/// Resolves `host` for `port` with the system's resolver (`getaddrinfo`,
/// blocking this thread); an IP literal is itself. The error says why
/// there is no address, as the resolver put it.
pub fn resolve(host: &Host, port: u16) -> Result<Resolved, String> {
    let addresses: Vec<SocketAddr> = match host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
        Host::Name { ascii, .. } => match (ascii.as_str(), port).to_socket_addrs() {
            Ok(found) => found.collect(),
            Err(error) => return Err(format!("resolving {ascii}: {error}")),
        },
    };
    if addresses.is_empty() {
        return Err(format!(
            "resolving {host}: the resolver returned no address"
        ));
    }
    Ok(Resolved::new(addresses))
}

/// Whether an address is anything but global unicast: loopback,
/// unspecified, private (RFC 1918, `fc00::/7`), link-local, shared
/// (`100.64.0.0/10`, carrier-grade NAT), `0.0.0.0/8`, multicast,
/// broadcast and the reserved `240.0.0.0/4`, the IETF and documentation
/// and benchmarking ranges, IPv6 site-local, discard-only and
/// IPv4-compatible addresses, and an IPv6 address that carries an IPv4
/// one (`::ffff:0:0/96` mapped, `64:ff9b::/96` NAT64, `2002::/16` 6to4)
/// when that IPv4 address is local (`64:ff9b:1::/48`, the local-use
/// NAT64 prefix, always).
pub fn is_local(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_local_v4(ip),
        IpAddr::V6(ip) => is_local_v6(ip),
    }
}

fn is_local_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0 // "this network", 0.0.0.0 among it
        || a == 10
        || (a == 100 && (b & 0xc0) == 64) // shared address space, CGNAT
        || a == 127
        || (a == 169 && b == 254)
        || (a == 172 && (b & 0xf0) == 16)
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 192 && b == 0 && c == 2) // TEST-NET-1
        || (a == 192 && b == 168)
        || (a == 198 && (b & 0xfe) == 18) // benchmarking
        || (a == 198 && b == 51 && c == 100) // TEST-NET-2
        || (a == 203 && b == 0 && c == 113) // TEST-NET-3
        || a >= 224 // multicast, reserved, broadcast
}

fn is_local_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_local_v4(v4);
    }
    let embedded = |high: u16, low: u16| {
        let [a, b] = high.to_be_bytes();
        let [c, d] = low.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    match segments {
        // ::, ::1, IPv4-compatible (::a.b.c.d, deprecated) and every other
        // address whose first 64 bits are zero (SIIT's ::ffff:0:a.b.c.d).
        [0, 0, 0, 0, ..] => true,
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => is_local_v4(embedded(high, low)),
        [0x64, 0xff9b, 1, ..] => true,
        [0x100, 0, 0, 0, ..] => true, // discard-only
        [0x2001, 0xdb8, ..] => true,  // documentation
        [0x2002, high, low, ..] => is_local_v4(embedded(high, low)),
        [first, ..] => {
            (first & 0xfe00) == 0xfc00 // unique local
                || (first & 0xffc0) == 0xfe80 // link-local
                || (first & 0xffc0) == 0xfec0 // site-local, deprecated
                || (first & 0xff00) == 0xff00 // multicast
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local(text: &str) -> bool {
        is_local(text.parse().unwrap())
    }

    #[test]
    fn loopback_private_link_local_and_unspecified_are_local() {
        for text in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "100.64.0.1",
            "100.127.255.255",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "64:ff9b:1::1",
            "2002:c0a8:101::1",
            "2001:db8::1",
            "100::1",
        ] {
            assert!(local(text), "{text} is local");
        }
    }

    #[test]
    fn global_unicast_addresses_are_not_local() {
        for text in [
            "93.184.216.34",
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "172.15.255.255",
            "100.128.0.1",
            "100.63.255.255",
            "192.169.0.1",
            "169.255.0.1",
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:93.184.216.34",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
        ] {
            assert!(!local(text), "{text} is global");
        }
    }

    #[test]
    fn localhost_and_the_loopback_literal_resolve_as_local() {
        let resolved = resolve(&Host::parse("localhost").unwrap(), 80).unwrap();
        assert!(resolved.local);
        assert!(resolved.addresses.iter().all(|a| a.ip().is_loopback()));
        let resolved = resolve(&Host::parse("127.0.0.1").unwrap(), 8080).unwrap();
        assert_eq!(resolved.addresses, vec!["127.0.0.1:8080".parse().unwrap()]);
        assert!(resolved.local);
    }

    #[test]
    fn one_local_address_among_global_ones_makes_the_whole_local() {
        let resolved = Resolved::new([
            "93.184.216.34:443".parse().unwrap(),
            "10.0.0.1:443".parse().unwrap(),
            "93.184.216.34:443".parse().unwrap(),
        ]);
        assert!(resolved.local);
        assert_eq!(resolved.addresses.len(), 2, "duplicates dropped");
    }

    #[test]
    fn a_name_that_does_not_resolve_says_so() {
        // `.invalid` never resolves (RFC 6761).
        let error = resolve(&Host::parse("no-such-host.invalid").unwrap(), 80).unwrap_err();
        assert!(error.contains("no-such-host.invalid"), "{error}");
    }
}
