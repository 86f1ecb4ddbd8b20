//! What kind of address an IP address is: public, or loopback, private, link-local (the cloud
//! metadata service at 169.254.169.254), unique-local, … An IPv4 address written as IPv6 (mapped,
//! compatible, NAT64, 6to4) is the IPv4 address it reaches. The sandbox's egress proxy and the
//! `fetch` rules judge by it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4 address written as IPv6 (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`) as the IPv4
/// address it reaches.
pub fn unmapped(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None if v6.segments()[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback() => {
                IpAddr::V4(v6.to_ipv4().unwrap_or(Ipv4Addr::UNSPECIFIED))
            }
            None => address,
        },
        IpAddr::V4(_) => address,
    }
}

/// What kind of non-public address `address` is; `None`: a public one.
pub fn kind(address: IpAddr) -> Option<&'static str> {
    match unmapped(address) {
        IpAddr::V4(v4) => kind_v4(v4),
        IpAddr::V6(v6) => kind_v6(v6),
    }
}

fn kind_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = v4.octets();
    if v4.is_loopback() {
        Some("loopback")
    } else if v4.is_unspecified() || a == 0 {
        Some("unspecified")
    } else if v4.is_link_local() {
        Some("link-local")
    } else if v4.is_private() {
        Some("private")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if v4.is_broadcast() || a >= 240 {
        Some("broadcast or reserved")
    } else if v4.is_multicast() {
        Some("multicast")
    } else if a == 192 && b == 0 && v4.octets()[2] == 0 {
        Some("protocol-assignment")
    } else {
        None
    }
}

fn kind_v6(v6: Ipv6Addr) -> Option<&'static str> {
    let first = v6.segments()[0];
    let embedded = |high: u16, low: u16| {
        let [h1, h2] = high.to_be_bytes();
        let [l1, l2] = low.to_be_bytes();
        kind_v4(Ipv4Addr::new(h1, h2, l1, l2))
    };
    let s = v6.segments();
    if v6.is_loopback() {
        Some("loopback")
    } else if v6.is_unspecified() {
        Some("unspecified")
    } else if v6.is_multicast() {
        Some("multicast")
    } else if first & 0xffc0 == 0xfe80 || first & 0xffc0 == 0xfec0 {
        Some("link-local")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64: the IPv4 address it translates to.
        embedded(s[6], s[7])
    } else if first == 0x2002 {
        // 6to4: the IPv4 address it tunnels to.
        embedded(s[1], s[2])
    } else {
        None
    }
}
