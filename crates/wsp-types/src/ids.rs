//! Lowercase hex text, and the fresh random ids written in it.
//!
//! Every random id of the kit (API key ids and secrets, snapshot ids, correlation ids, MCP
//! bearer tokens, test markers) is [`random_hex`]: bytes from the operating system's random
//! source as lowercase hex, two digits per byte. Its length is the id's format on the wire.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// `bytes` as lowercase hex, two digits per byte.
///
/// ```
/// assert_eq!(wsp_types::hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
/// ```
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// `bytes` fresh random bytes from the operating system, as [`hex`]: `2 * bytes` digits.
///
/// # Panics
/// When the operating system's random source fails, which no supported system does once it
/// has booted: an id that might repeat must not be handed out instead.
pub fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source is available");
    hex(&buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_writes_two_lowercase_digits_per_byte() {
        let all: Vec<u8> = (0..=255).collect();
        let text = hex(&all);
        assert_eq!(text.len(), 512);
        for (i, pair) in text.as_bytes().chunks(2).enumerate() {
            assert_eq!(pair, format!("{i:02x}").as_bytes());
        }
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn random_hex_has_the_asked_length_and_differs_each_time() {
        let (a, b) = (random_hex(16), random_hex(16));
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
        );
        assert_ne!(a, b, "128 random bits repeated");
        assert_eq!(random_hex(0), "");
    }
}
