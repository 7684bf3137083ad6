//! A certificate's subject as the string Java's `X500Principal.getName()` returns (the RFC 2253
//! form), which ZooKeeper's `X509AuthenticationProvider` makes a TLS client's `x509:` id from.
//! ACLs `x509:<dn>` and `X509AuthenticationProvider.superUser` are compared with that id by
//! string equality, so the string must be Java's byte for byte, quirks included; the
//! "Java escapes" and "Java decodes" rules below are those of the JDK 17 runtime, found by
//! feeding it certificates (`server/tests/x509_name.rs` compares every rule with a running
//! JVM).
//!
//! # The rules
//!
//! - RDNs are written last first (RFC 2253 section 2.1), joined by `,` without spaces. An empty
//!   RDN (a SET with nothing in it) is an empty string between its commas; an empty name is `""`.
//! - The attribute values of a multi-valued RDN are joined by `+` in the order of the DER SET,
//!   not sorted (section 2.2).
//! - Types: `CN`, `C`, `L`, `ST`, `O`, `OU`, `STREET`, `DC` and `UID` by keyword (the keywords
//!   of RFC 2253 section 2.3); every other type (emailAddress, serialNumber, title, surname,
//!   givenName, ...) as its dotted OID, e.g. `1.2.840.113549.1.9.1`.
//! - A value is written as a string when its type has a keyword and its tag is UTF8String,
//!   PrintableString, TeletexString (T61String), IA5String, GeneralString or BMPString. Any
//!   other value (a dotted type, UniversalString, VisibleString, NumericString, an INTEGER,
//!   a constructed string, ...) is `#` and the lowercase hex of its TLV (section 2.4), the
//!   length written in its shortest form.
//! - Every string type's bytes are decoded as UTF-8, as Java does, with Java's replacement of
//!   malformed input by U+FFFD (its own rule for how many bytes one U+FFFD covers). So a
//!   Latin-1 byte in a TeletexString becomes U+FFFD, and a BMPString's UTF-16 bytes are read as
//!   UTF-8 too: `CN=ab` as a BMPString is `CN=\00a\00b`. Characters outside ASCII are written
//!   as they are (UTF-8 in the Rust string), not as `\xx` escapes.
//! - Escapes: `,` `=` `+` `<` `>` `#` `;` `"` `\` get a `\` before them wherever they are (RFC
//!   2253 escapes `#` only at the start and does not list `=`; Java escapes both everywhere),
//!   NUL becomes `\00`, and spaces and carriage returns at the start or the end of the value get
//!   a `\` before them. Every other character, control characters included, is written as is.
//!
//! # Refused (`Err`), where Java would answer
//!
//! - Indefinite lengths (BER). Java turns them into definite ones as it parses; a certificate
//!   is DER (RFC 5280), and no CA issues these.
//!
//! Everything Java itself refuses is refused too: a subject that is not a SEQUENCE, an RDN that
//! is not a SET, an attribute that is not a SEQUENCE of an OID and one value, an OID with an
//! empty, unterminated or zero-padded encoding or longer than 4096 bytes, tags above 30
//! (multi-byte tags), lengths of more than four bytes.
//!
//! Non-minimal definite lengths are accepted, as Java accepts them; the bytes inside a
//! constructed value are copied as they are.
//!
//! The DER is walked by hand rather than with a parser crate: a DER parser is right to refuse
//! the non-minimal lengths Java accepts, and nothing here needs more than tags and lengths.

use std::fmt::Write as _;

/// The subject of the certificate `cert_der` (one X.509 certificate, DER), as Java's
/// `X509Certificate.getSubjectX500Principal().getName()` writes it.
pub fn rfc2253_name(cert_der: &[u8]) -> Result<String, String> {
    let mut top = Reader::new(cert_der);
    let cert = top.read_tagged(SEQUENCE, "certificate")?;
    let mut cert = Reader::new(cert.content);
    let tbs = cert.read_tagged(SEQUENCE, "tbsCertificate")?;
    let mut tbs = Reader::new(tbs.content);
    // version [0] EXPLICIT (optional), serialNumber, signature, issuer, validity, subject.
    if tbs.peek_tag() == Some(0xa0) {
        tbs.read("version")?;
    }
    for field in ["serialNumber", "signature", "issuer", "validity"] {
        tbs.read(field)?;
    }
    let subject = tbs.read("subject")?;
    name_to_string(subject)
}

/// The same string from a DER-encoded X.501 `Name` alone (a certificate's subject field), as
/// Java's `new X500Principal(name_der).getName()` writes it. Like Java, it ignores any bytes
/// after the name.
pub fn rfc2253_name_from_subject(name_der: &[u8]) -> Result<String, String> {
    name_to_string(Reader::new(name_der).read("name")?)
}

const SEQUENCE: u8 = 0x30;
const SET: u8 = 0x31;
const OID: u8 = 0x06;

/// The DER string tags Java writes as strings: UTF8String, PrintableString, TeletexString,
/// IA5String, GeneralString, BMPString.
const STRING_TAGS: [u8; 6] = [0x0c, 0x13, 0x14, 0x16, 0x1b, 0x1e];

/// The attribute types RFC 2253 section 2.3 names, the only ones Java writes by keyword.
const KEYWORDS: [(&str, &str); 9] = [
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.9", "STREET"),
    ("0.9.2342.19200300.100.1.25", "DC"),
    ("0.9.2342.19200300.100.1.1", "UID"),
];

/// Java's cap on an OID's encoded length.
const MAX_OID_LEN: usize = 4096;

fn name_to_string(name: Tlv<'_>) -> Result<String, String> {
    if name.tag != SEQUENCE {
        return Err(format!(
            "the name is not a SEQUENCE (tag {:#04x})",
            name.tag
        ));
    }
    let mut rdns = Vec::new();
    let mut r = Reader::new(name.content);
    while !r.is_empty() {
        let rdn = r.read("RDN")?;
        if rdn.tag != SET {
            return Err(format!("an RDN is not a SET (tag {:#04x})", rdn.tag));
        }
        let mut avas = Vec::new();
        let mut a = Reader::new(rdn.content);
        while !a.is_empty() {
            avas.push(ava_to_string(a.read("attribute")?)?);
        }
        rdns.push(avas.join("+"));
    }
    rdns.reverse();
    Ok(rdns.join(","))
}

fn ava_to_string(ava: Tlv<'_>) -> Result<String, String> {
    if ava.tag != SEQUENCE {
        return Err(format!(
            "an attribute is not a SEQUENCE (tag {:#04x})",
            ava.tag
        ));
    }
    let mut r = Reader::new(ava.content);
    let oid = r.read_tagged(OID, "attribute type")?;
    let value = r.read("attribute value")?;
    if !r.is_empty() {
        return Err("an attribute has more than a type and a value".to_string());
    }
    let dotted = oid_to_dotted(oid.content)?;
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == dotted).map(|(_, k)| *k);
    let mut out = String::new();
    match keyword {
        Some(keyword) if STRING_TAGS.contains(&value.tag) => {
            out.push_str(keyword);
            out.push('=');
            escape_value(&java_utf8_decode(value.content), &mut out);
        }
        _ => {
            out.push_str(keyword.unwrap_or(&dotted));
            out.push_str("=#");
            for b in value.reencoded() {
                let _ = write!(out, "{b:02x}");
            }
        }
    }
    Ok(out)
}

/// Java's escaping of a string value in the RFC 2253 form (see the module's rules).
fn escape_value(value: &str, out: &mut String) {
    const ESCAPEES: &str = ",=+<>#;\"\\";
    let mut escaped: Vec<char> = Vec::with_capacity(value.len());
    for c in value.chars() {
        if ESCAPEES.contains(c) {
            escaped.push('\\');
            escaped.push(c);
        } else if c == '\0' {
            escaped.extend(['\\', '0', '0']);
        } else {
            escaped.push(c);
        }
    }
    let white = |c: &char| *c == ' ' || *c == '\r';
    let lead = escaped.iter().take_while(|c| white(c)).count();
    let trail = escaped.iter().rev().take_while(|c| white(c)).count();
    for (i, c) in escaped.iter().enumerate() {
        if i < lead || i >= escaped.len() - trail {
            out.push('\\');
        }
        out.push(*c);
    }
}

/// An OID's content octets as Java's `ObjectIdentifier.toString()` writes them: arcs of any
/// size, the first two from the first subidentifier (X.690 section 8.19.4).
fn oid_to_dotted(content: &[u8]) -> Result<String, String> {
    if content.is_empty() || content.len() > MAX_OID_LEN {
        return Err(format!("an OID of {} bytes", content.len()));
    }
    if content[content.len() - 1] & 0x80 != 0 {
        return Err("an OID whose last subidentifier is not ended".to_string());
    }
    let mut arcs: Vec<String> = Vec::new();
    let mut start = true;
    let mut value = BigUint::default();
    for &b in content {
        if start && b == 0x80 {
            return Err("an OID subidentifier with a leading zero octet".to_string());
        }
        value.push_7_bits(b & 0x7f);
        start = b & 0x80 == 0;
        if start {
            if arcs.is_empty() {
                let (first, rest) = match value.small() {
                    Some(v) if v < 40 => ("0", BigUint::from_u32(v)),
                    Some(v) if v < 80 => ("1", BigUint::from_u32(v - 40)),
                    _ => ("2", value.minus_80()),
                };
                arcs.push(first.to_string());
                arcs.push(rest.to_decimal());
            } else {
                arcs.push(value.to_decimal());
            }
            value = BigUint::default();
        }
    }
    Ok(arcs.join("."))
}

/// An unsigned integer of any size, little-endian base 2^32 limbs: OID arcs have no bound.
#[derive(Default)]
struct BigUint {
    limbs: Vec<u32>,
}

impl BigUint {
    fn from_u32(v: u32) -> Self {
        BigUint { limbs: vec![v] }
    }

    /// `self = self * 128 + bits`.
    fn push_7_bits(&mut self, bits: u8) {
        let mut carry = u64::from(bits);
        for limb in &mut self.limbs {
            let v = (u64::from(*limb) << 7) | carry;
            *limb = v as u32;
            carry = v >> 32;
        }
        if carry != 0 {
            self.limbs.push(carry as u32);
        }
    }

    fn small(&self) -> Option<u32> {
        match self.limbs.iter().rposition(|l| *l != 0) {
            None => Some(0),
            Some(0) => Some(self.limbs[0]),
            Some(_) => None,
        }
    }

    /// `self - 80`, for a value of at least 80.
    fn minus_80(mut self) -> Self {
        let mut borrow = 80u64;
        for limb in &mut self.limbs {
            let v = u64::from(*limb);
            if v >= borrow {
                *limb = (v - borrow) as u32;
                break;
            }
            *limb = (v + (1 << 32) - borrow) as u32;
            borrow = 1;
        }
        self
    }

    fn to_decimal(&self) -> String {
        let mut limbs = self.limbs.clone();
        let mut chunks = Vec::new(); // base 10^9, least significant first
        while limbs.iter().any(|l| *l != 0) {
            let mut rem = 0u64;
            for limb in limbs.iter_mut().rev() {
                let v = (rem << 32) | u64::from(*limb);
                *limb = (v / 1_000_000_000) as u32;
                rem = v % 1_000_000_000;
            }
            chunks.push(rem as u32);
        }
        let Some((last, rest)) = chunks.split_last() else {
            return "0".to_string();
        };
        let mut s = last.to_string();
        for chunk in rest.iter().rev() {
            let _ = write!(s, "{chunk:09}");
        }
        s
    }
}

/// `new String(bytes, StandardCharsets.UTF_8)` as the JDK does it: each malformed sequence
/// becomes one U+FFFD, where Java's decoder decides how many bytes a sequence covers (an
/// encoded surrogate is three bytes and one U+FFFD; a truncated sequence at the end is one
/// U+FFFD and whatever continuation bytes follow its lead are dropped with it).
fn java_utf8_decode(src: &[u8]) -> String {
    const REPL: char = '\u{fffd}';
    let cont = |b: u8| b & 0xc0 == 0x80;
    let mut out = String::with_capacity(src.len());
    let sl = src.len();
    let mut sp = 0;
    while sp < sl {
        let b1 = src[sp];
        sp += 1;
        match b1 {
            0x00..=0x7f => out.push(char::from(b1)),
            0xc2..=0xdf => {
                if sp < sl {
                    let b2 = src[sp];
                    if cont(b2) {
                        sp += 1;
                        out.push(decoded(
                            ((u32::from(b1) & 0x1f) << 6) | (u32::from(b2) & 0x3f),
                        ));
                    } else {
                        out.push(REPL);
                    }
                    continue;
                }
                out.push(REPL);
                break;
            }
            0xe0..=0xef => {
                let overlong = |b2: u8| b1 == 0xe0 && b2 & 0xe0 == 0x80;
                if sp + 1 < sl {
                    let (b2, b3) = (src[sp], src[sp + 1]);
                    if overlong(b2) || !cont(b2) || !cont(b3) {
                        out.push(REPL);
                        sp += if overlong(b2) || !cont(b2) { 0 } else { 1 };
                    } else {
                        sp += 2;
                        let c = ((u32::from(b1) & 0x0f) << 12)
                            | ((u32::from(b2) & 0x3f) << 6)
                            | (u32::from(b3) & 0x3f);
                        // An encoded surrogate: one U+FFFD for the three bytes.
                        out.push(char::from_u32(c).unwrap_or(REPL));
                    }
                    continue;
                }
                if sp < sl && (overlong(src[sp]) || !cont(src[sp])) {
                    out.push(REPL);
                    continue;
                }
                out.push(REPL);
                break;
            }
            0xf0..=0xf7 => {
                let bad_second = |b2: u8| {
                    b1 > 0xf4
                        || (b1 == 0xf0 && !(0x90..=0xbf).contains(&b2))
                        || (b1 == 0xf4 && b2 & 0xf0 != 0x80)
                        || !cont(b2)
                };
                if sp + 2 < sl {
                    let (b2, b3, b4) = (src[sp], src[sp + 1], src[sp + 2]);
                    let uc = ((u32::from(b1) & 0x07) << 18)
                        | ((u32::from(b2) & 0x3f) << 12)
                        | ((u32::from(b3) & 0x3f) << 6)
                        | (u32::from(b4) & 0x3f);
                    if !cont(b2) || !cont(b3) || !cont(b4) || !(0x10000..=0x10ffff).contains(&uc) {
                        out.push(REPL);
                        sp += if bad_second(b2) {
                            0
                        } else if !cont(b3) {
                            1
                        } else {
                            2
                        };
                    } else {
                        sp += 3;
                        out.push(decoded(uc));
                    }
                    continue;
                }
                if b1 > 0xf4 || (sp < sl && bad_second(src[sp])) {
                    out.push(REPL);
                    continue;
                }
                sp += 1;
                out.push(REPL);
                if sp < sl && !cont(src[sp]) {
                    continue;
                }
                break;
            }
            // Continuation bytes without a lead, C0 and C1 (always overlong), F8 to FF.
            _ => out.push(REPL),
        }
    }
    out
}

/// A scalar value the decoder has checked (never a surrogate, at most U+10FFFF).
fn decoded(c: u32) -> char {
    char::from_u32(c).unwrap_or('\u{fffd}')
}

/// One TLV.
#[derive(Clone, Copy)]
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
}

impl Tlv<'_> {
    /// The TLV as Java's `DerValue.toByteArray()` writes it: the tag, the length in its
    /// shortest form, the content octets as they came.
    fn reencoded(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.content.len() + 6);
        v.push(self.tag);
        let len = self.content.len();
        if len < 0x80 {
            v.push(len as u8);
        } else {
            let bytes = len.to_be_bytes();
            let skip = bytes.iter().take_while(|b| **b == 0).count();
            v.push(0x80 | (bytes.len() - skip) as u8);
            v.extend_from_slice(&bytes[skip..]);
        }
        v.extend_from_slice(self.content);
        v
    }
}

/// Reads TLVs off a byte slice with Java's tolerance: definite lengths in any form of up to four
/// length bytes, single-byte tags only.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { rest: bytes }
    }

    fn is_empty(&self) -> bool {
        self.rest.is_empty()
    }

    fn peek_tag(&self) -> Option<u8> {
        self.rest.first().copied()
    }

    fn read_tagged(&mut self, tag: u8, what: &str) -> Result<Tlv<'a>, String> {
        let tlv = self.read(what)?;
        if tlv.tag != tag {
            return Err(format!("{what}: tag {:#04x}, expected {tag:#04x}", tlv.tag));
        }
        Ok(tlv)
    }

    fn read(&mut self, what: &str) -> Result<Tlv<'a>, String> {
        let short = || format!("{what}: truncated");
        let (&tag, rest) = self.rest.split_first().ok_or_else(short)?;
        if tag & 0x1f == 0x1f {
            return Err(format!("{what}: a multi-byte tag"));
        }
        let (&first, mut rest) = rest.split_first().ok_or_else(short)?;
        let len = match first {
            0x00..=0x7f => usize::from(first),
            0x80 => return Err(format!("{what}: an indefinite length (BER, not DER)")),
            0x81..=0x84 => {
                let n = usize::from(first & 0x7f);
                if rest.len() < n {
                    return Err(short());
                }
                let (bytes, after) = rest.split_at(n);
                rest = after;
                let len = bytes.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
                if len > i32::MAX as u64 {
                    return Err(format!("{what}: a length of {len}"));
                }
                len as usize
            }
            _ => return Err(format!("{what}: a length of more than four bytes")),
        };
        if rest.len() < len {
            return Err(short());
        }
        let (content, after) = rest.split_at(len);
        self.rest = after;
        Ok(Tlv { tag, content })
    }
}

#[cfg(test)]
mod tests {
    //! Fixed vectors: each subject's DER, and the string Java 17's `X500Principal.getName()`
    //! returned for it. `server/tests/x509_name.rs` checks many more against a running JVM.

    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn name(der_hex: &str) -> Result<String, String> {
        rfc2253_name_from_subject(&unhex(der_hex))
    }

    #[test]
    fn rdns_last_first_with_keywords() {
        // C=US (PrintableString), O="Example, Inc.", CN=host: written last RDN first.
        let der = "3034 310b3009 0603550406 1302 5553
                        3116 3014 060355040a 0c0d 4578616d706c652c20496e632e
                        310d 300b 0603550403 0c04 686f7374";
        assert_eq!(name(der).unwrap(), "CN=host,O=Example\\, Inc.,C=US");
        // DC (IA5String) then UID.
        let der = "3028 3113 3011 060a0992268993f22c640119 1603 636f6d
                        3111 300f 060a0992268993f22c640101 0c01 75";
        assert_eq!(name(der).unwrap(), "UID=u,DC=com");
        assert_eq!(name("3000").unwrap(), "");
        // Java's X500Principal(byte[]) ignores what follows the name.
        assert_eq!(name("3000 00").unwrap(), "");
    }

    #[test]
    fn multi_valued_rdn_keeps_the_set_order() {
        // One RDN holding O=o then CN=c (not DER order): Java does not sort.
        let der = "3016 3114 3008 060355040a 0c01 6f 3008 0603550403 0c01 63";
        assert_eq!(name(der).unwrap(), "O=o+CN=c");
    }

    #[test]
    fn escapes() {
        // CN=" #a,b+c"d\e<f>g;h=i "
        let der = "301f 311d 301b 0603550403 0c14 2023612c622b6322645c653c663e673b683d6920";
        assert_eq!(name(der).unwrap(), r#"CN=\ \#a\,b\+c\"d\\e\<f\>g\;h\=i\ "#);
        // CN="\r\0x": a leading carriage return gets a backslash, NUL is \00.
        let der = "300e 310c 300a 0603550403 0c03 0d0078";
        assert_eq!(name(der).unwrap(), "CN=\\\r\\00x");
    }

    #[test]
    fn strings_are_read_as_utf8() {
        // UTF8String "Jürgen 中文 😀": written as is.
        let der = "301e 311c 301a 0603550403 0c13 4ac3bc7267656e20e4b8ade6968720f09f9880";
        assert_eq!(name(der).unwrap(), "CN=Jürgen 中文 😀");
        // TeletexString "Müller" in Latin-1: the 0xfc byte is not UTF-8.
        let der = "3011 310f 300d 0603550403 1406 4dfc6c6c6572";
        assert_eq!(name(der).unwrap(), "CN=M\u{fffd}ller");
        // BMPString "ab" (00 61 00 62) read as UTF-8.
        let der = "300f 310d 300b 0603550403 1e04 00610062";
        assert_eq!(name(der).unwrap(), "CN=\\00a\\00b");
        // Malformed UTF-8: ff, c3 before an ASCII byte, an encoded surrogate (ed a0 80, one
        // U+FFFD), a four-byte sequence cut at the end (one U+FFFD).
        let der = "3016 3114 3012 0603550403 0c0b 61ffc362eda08063f09f98";
        assert_eq!(name(der).unwrap(), "CN=a\u{fffd}\u{fffd}b\u{fffd}c\u{fffd}");
    }

    #[test]
    fn hex_values() {
        // emailAddress has no RFC 2253 keyword: dotted OID, value in hex.
        let der = "3016 3114 3012 06092a864886f70d010901 1605 6140622e63";
        assert_eq!(name(der).unwrap(), "1.2.840.113549.1.9.1=#16056140622e63");
        // A UniversalString under CN.
        let der = "3013 3111 300f 0603550403 1c08 0000006100000062";
        assert_eq!(name(der).unwrap(), "CN=#1c080000006100000062");
        // An INTEGER under CN.
        assert_eq!(
            name("300c 310a 3008 0603550403 020105").unwrap(),
            "CN=#020105"
        );
        // A non-minimal length (81 01) is written in its shortest form.
        assert_eq!(
            name("300c 310a 3008 06022a03 0c810178").unwrap(),
            "1.2.3=#0c0178"
        );
    }

    #[test]
    fn refused() {
        // An indefinite length.
        assert!(name("3010 310e 300c 0603550403 2c80 0c0178 0000").is_err());
        // An RDN that is not a SET.
        assert!(name("300a 3008 0603550403 0c0178").is_err());
        // A zero-padded OID arc.
        assert!(name("300d 310b 3009 06032a8003 0c0178").is_err());
    }

    #[test]
    fn oids() {
        let dotted = |hex: &str| oid_to_dotted(&unhex(hex)).unwrap();
        assert_eq!(dotted("550403"), "2.5.4.3");
        assert_eq!(dotted("27"), "0.39");
        assert_eq!(dotted("28"), "1.0");
        assert_eq!(dotted("8837"), "2.999");
        assert_eq!(
            dotted("8837 8280808080808080800001"),
            "2.999.18446744073709551616.1"
        );
        assert_eq!(dotted("81808080808080808000"), "2.9223372036854775728");
    }

    #[test]
    fn subject_of_a_certificate() {
        // The fields before the subject are skipped, not checked: version, serialNumber,
        // signature, issuer, validity (empty here), then the subject CN=x.
        let cert = "3020 301c a003020102 020101 3000 3000 3000 300c310a3008 0603550403 0c0178
                    3000";
        assert_eq!(rfc2253_name(&unhex(cert)).unwrap(), "CN=x");
        // Without the optional version.
        let cert = "3019 3017 020101 3000 3000 3000 300c310a3008 0603550403 0c0178";
        assert_eq!(rfc2253_name(&unhex(cert)).unwrap(), "CN=x");
    }
}
