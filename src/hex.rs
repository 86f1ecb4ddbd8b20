//! Lowercase hexadecimal: the one spelling of digests, keys, ids and random names, in files and
//! on the wire.

/// The digits, by value.
pub const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as two lowercase digits each.
pub fn encode(bytes: impl AsRef<[u8]>) -> String {
    let bytes = bytes.as_ref();
    let mut out = String::with_capacity(2 * bytes.len());
    for byte in bytes {
        out.push(DIGITS[(byte >> 4) as usize] as char);
        out.push(DIGITS[(byte & 0xf) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_byte_is_its_two_lowercase_digits() {
        let all: Vec<u8> = (0..=255).collect();
        let formatted: String = all.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(super::encode(&all), formatted);
        assert_eq!(super::encode([]), "");
    }
}
