//! `paddock::tls::rfc2253_name` against the JVM: every certificate here is made at test time by
//! the `openssl` command (3.0), or by putting a hand-written subject into such a certificate,
//! and each subject is also given to Java 17's `X509Certificate.getSubjectX500Principal()
//! .getName()` (a small program compiled with `javac` into the test's directory, all
//! certificates in one JVM). The strings must be equal byte for byte: that string is the
//! `x509:` id ZooKeeper's X509AuthenticationProvider gives a TLS client, and ACLs and the
//! superUser setting are compared with it by string equality.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use paddock::tls::{rfc2253_name, rfc2253_name_from_subject};

// ---------------------------------------------------------------------------------------------
// The tools.

/// Prints each file's subject as Java writes it: `OK <hex of the UTF-8 bytes>` or
/// `ERR <exception>`, one line per file. Files ending in `.name` hold a bare DER Name
/// (`new X500Principal(bytes)`), the others a DER certificate.
const JAVA_PROGRAM: &str = r#"
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.HexFormat;
import javax.security.auth.x500.X500Principal;

public class SubjectName {
    public static void main(String[] args) throws Exception {
        CertificateFactory cf = CertificateFactory.getInstance("X.509");
        StringBuilder out = new StringBuilder();
        for (String file : Files.readAllLines(Path.of(args[0]))) {
            try {
                byte[] der = Files.readAllBytes(Path.of(file));
                String name;
                if (file.endsWith(".name")) {
                    name = new X500Principal(der).getName();
                } else {
                    X509Certificate cert = (X509Certificate) cf.generateCertificate(
                        new ByteArrayInputStream(der));
                    name = cert.getSubjectX500Principal().getName();
                }
                out.append("OK ")
                   .append(HexFormat.of().formatHex(name.getBytes(StandardCharsets.UTF_8)));
            } catch (Exception e) {
                out.append("ERR ").append(e.toString().replace('\n', ' '));
            }
            out.append('\n');
        }
        System.out.print(out);
    }
}
"#;

fn run(dir: &Path, program: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The test directory, with the Java program compiled, an EC key, and the openssl configs.
fn workdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("x509-name");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("SubjectName.java"), JAVA_PROGRAM).unwrap();
        run(&dir, "javac", &["-d", ".", "SubjectName.java"]);
        run(&dir, "openssl", &["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "k.pem"]);
        // string_mask picks the DER string type openssl writes: `default` prefers
        // PrintableString, then TeletexString (Latin-1 bytes), then BMPString; `pkix` skips
        // TeletexString. `myattr` is an attribute type Java has no keyword for.
        for (file, mask) in [("default.cnf", "default"), ("pkix.cnf", "pkix"), ("utf8.cnf", "utf8only")]
        {
            let cnf = format!(
                "oid_section = oids\n[oids]\nmyattr = 1.2.3.4\nbigattr = 2.999.18446744073709551616\n\
                 [req]\ndistinguished_name = dn\nstring_mask = {mask}\n[dn]\n"
            );
            std::fs::write(dir.join(file), cnf).unwrap();
        }
        dir
    })
}

/// Runs Java on `files` (relative to the work dir, listed in the file `list`); one `Ok(name)` or `Err(exception)` each.
fn java_names(list: &str, files: &[String]) -> Vec<Result<String, String>> {
    let dir = workdir();
    std::fs::write(dir.join(list), files.join("\n") + "\n").unwrap();
    let out = run(dir, "java", &["-cp", ".", "SubjectName", list]);
    let out = String::from_utf8(out).unwrap();
    let names: Vec<_> = out
        .lines()
        .map(|line| match line.strip_prefix("OK ") {
            Some(hex) => Ok(String::from_utf8(unhex(hex)).unwrap()),
            None => Err(line.to_string()),
        })
        .collect();
    assert_eq!(names.len(), files.len(), "java printed:\n{out}");
    names
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// A certificate for `subj` (openssl's `-subj` syntax) made by `openssl req -x509`, with
/// `extra` arguments (`-multivalue-rdn`, `-utf8`, `-config <file>`). Every certificate has a
/// critical subjectAltName, so that Java also parses one with an empty subject.
fn openssl_cert(file: &str, subj: &str, extra: &[&str]) -> Vec<u8> {
    let dir = workdir();
    let mut args = vec![
        "req", "-x509", "-key", "k.pem", "-days", "1", "-outform", "DER",
    ];
    args.extend([
        "-out",
        file,
        "-subj",
        subj,
        "-addext",
        "subjectAltName=critical,DNS:x509.test",
    ]);
    args.extend(extra);
    run(dir, "openssl", &args);
    std::fs::read(dir.join(file)).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Writing and splicing DER.

fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    let len = content.len();
    if len < 0x80 {
        v.push(len as u8);
    } else if len < 0x100 {
        v.extend([0x81, len as u8]);
    } else {
        v.extend([0x82, (len >> 8) as u8, len as u8]);
    }
    v.extend_from_slice(content);
    v
}

fn oid(dotted: &str) -> Vec<u8> {
    let arcs: Vec<u128> = dotted.split('.').map(|a| a.parse().unwrap()).collect();
    let mut content = Vec::new();
    for arc in std::iter::once(arcs[0] * 40 + arcs[1]).chain(arcs[2..].iter().copied()) {
        let mut groups = vec![(arc & 0x7f) as u8];
        let mut rest = arc >> 7;
        while rest != 0 {
            groups.push(0x80 | (rest & 0x7f) as u8);
            rest >>= 7;
        }
        content.extend(groups.iter().rev());
    }
    tlv(0x06, &content)
}

fn ava(oid_dotted: &str, value: &[u8]) -> Vec<u8> {
    tlv(0x30, &[oid(oid_dotted), value.to_vec()].concat())
}

fn rdn(avas: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x31, &avas.concat())
}

fn name(rdns: &[Vec<u8>]) -> Vec<u8> {
    tlv(0x30, &rdns.concat())
}

fn utf8(s: &str) -> Vec<u8> {
    tlv(0x0c, s.as_bytes())
}

fn cn(value: Vec<u8>) -> Vec<u8> {
    name(&[rdn(&[ava(CN, &value)])])
}

const CN: &str = "2.5.4.3";
const O: &str = "2.5.4.10";
const OU: &str = "2.5.4.11";

/// Reads one TLV (definite lengths only, as the certificates here have): (header+content,
/// content, rest).
fn split_tlv(der: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let (len, header) = match der[1] {
        l @ 0..=0x7f => (usize::from(l), 2),
        0x81 => (usize::from(der[2]), 3),
        0x82 => (usize::from(der[2]) << 8 | usize::from(der[3]), 4),
        l => panic!("length byte {l:#x}"),
    };
    (
        &der[..header + len],
        &der[header..header + len],
        &der[header + len..],
    )
}

/// `cert` with its subject replaced by `subject` (any bytes). The signature no longer matches,
/// which parsing does not check.
fn with_subject(cert: &[u8], subject: &[u8]) -> Vec<u8> {
    let (_, cert_content, _) = split_tlv(cert);
    let (_, tbs, after_tbs) = split_tlv(cert_content);
    let mut fields = Vec::new();
    let mut rest = tbs;
    while !rest.is_empty() {
        let (field, _, r) = split_tlv(rest);
        fields.push(field.to_vec());
        rest = r;
    }
    // [0] version, serialNumber, signature, issuer, validity, subject, ...
    assert_eq!(fields[0][0], 0xa0);
    fields[5] = subject.to_vec();
    let tbs = tlv(0x30, &fields.concat());
    tlv(0x30, &[tbs, after_tbs.to_vec()].concat())
}

fn base_cert() -> &'static [u8] {
    static CERT: OnceLock<Vec<u8>> = OnceLock::new();
    CERT.get_or_init(|| openssl_cert("base.der", "/CN=base", &[]))
}

// ---------------------------------------------------------------------------------------------
// The comparison.

enum Subject {
    /// `openssl req -x509 -subj <subj> <args>`.
    Openssl(&'static str, Vec<&'static str>),
    /// These DER bytes as the subject of an openssl certificate.
    Der(Vec<u8>),
    /// These bytes as a bare name only (`new X500Principal(bytes)`): not a certificate's subject.
    NameOnly(Vec<u8>),
}

/// What Java does that paddock must not do the same way.
#[derive(PartialEq)]
enum Expect {
    Same,
    /// Java reads it; paddock refuses (module docs: indefinite lengths).
    PaddockRefuses,
}

struct Case {
    label: String,
    subject: Subject,
    expect: Expect,
}

fn case(label: impl Into<String>, subject: Subject) -> Case {
    Case {
        label: label.into(),
        subject,
        expect: Expect::Same,
    }
}

fn ossl(label: &str, subj: &'static str, args: &[&'static str]) -> Case {
    case(label, Subject::Openssl(subj, args.to_vec()))
}

fn der(label: &str, subject: Vec<u8>) -> Case {
    case(label, Subject::Der(subject))
}

/// Makes each case's certificate (and, for written subjects, a bare `.name` file), runs Java
/// once on all of them and compares. Panics listing every mismatch with both strings.
fn compare(tag: &str, cases: &[Case]) -> usize {
    let dir = workdir();
    let mut files = Vec::new();
    let mut ours = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let name_bytes = match &c.subject {
            Subject::Der(subject) | Subject::NameOnly(subject) => Some(subject),
            Subject::Openssl(..) => None,
        };
        if let Some(subject) = name_bytes {
            let name_file = format!("{tag}-{i}.name");
            std::fs::write(dir.join(&name_file), subject).unwrap();
            files.push(name_file);
            ours.push((i, ".name", rfc2253_name_from_subject(subject)));
        }
        let file = format!("{tag}-{i}.der");
        let cert = match &c.subject {
            Subject::Openssl(subj, args) => openssl_cert(&file, subj, args),
            Subject::Der(subject) => {
                let cert = with_subject(base_cert(), subject);
                std::fs::write(dir.join(&file), &cert).unwrap();
                cert
            }
            Subject::NameOnly(_) => continue,
        };
        files.push(file);
        ours.push((i, ".der", rfc2253_name(&cert)));
    }
    let java = java_names(&format!("{tag}-files.txt"), &files);
    let mut failures = String::new();
    let mut compared = 0;
    for ((i, kind, ours), java) in ours.into_iter().zip(java) {
        let c = &cases[i];
        let ok = match (&ours, &java, &c.expect) {
            (Ok(a), Ok(b), Expect::Same) => a.as_bytes() == b.as_bytes(),
            (Err(_), Err(_), Expect::Same) => true,
            (Err(_), Ok(_), Expect::PaddockRefuses) => true,
            _ => false,
        };
        compared += 1;
        if !ok {
            let _ = writeln!(
                failures,
                "{tag}-{i}{kind} {}:\n  paddock: {ours:?}\n     java: {java:?}",
                c.label
            );
        }
    }
    assert!(failures.is_empty(), "differences from Java:\n{failures}");
    compared
}

// ---------------------------------------------------------------------------------------------
// The subjects.

#[test]
fn subjects_made_by_openssl_match_java() {
    let mv = "-multivalue-rdn";
    let u8 = "-utf8";
    let def = &["-utf8", "-config", "default.cnf"][..];
    let pkix = &["-utf8", "-config", "pkix.cnf"][..];
    let utf8only = &["-utf8", "-config", "utf8.cnf"][..];
    let cases = vec![
        ossl("plain CN", "/CN=plain", &[]),
        ossl(
            "the usual six, comma in O",
            "/C=US/ST=California/L=Palo Alto/O=Example\\, Inc./OU=Eng/CN=host.example.com",
            &[],
        ),
        ossl(
            "multi-valued RDN",
            "/CN=a+O=b+OU=c/DC=example/DC=com",
            &[mv],
        ),
        ossl("multi-valued, one type twice", "/CN=y+CN=x/O=o", &[mv]),
        ossl(
            "multi-valued with escapes and spaces",
            "/CN=a\\+b +O= c,d",
            &[mv],
        ),
        ossl("RFC 2253 specials", "/CN=a\\,b\\+c\"d\\\\e<f>g;h", &[]),
        ossl("= and # inside", "/CN=a=b#c", &[]),
        ossl("leading #", "/CN=#hash", &[]),
        ossl(
            "leading and trailing spaces",
            "/O= lead/OU=trail /CN= both ",
            &[],
        ),
        ossl("only spaces", "/CN=   ", &[]),
        ossl("carriage returns at the ends", "/CN=\r x \r", &[]),
        ossl("tab, newline, DEL inside", "/CN=a\tb\nc\x7fd", &[]),
        ossl(
            "ASCII punctuation Java leaves alone",
            "/CN=!$%&'()*-.\\/:?@[]^_`{|}~",
            &[],
        ),
        ossl("Latin-1 as UTF8String", "/CN=héllo Müller", &[u8]),
        ossl("CJK as UTF8String", "/CN=中文/O=日本語", &[u8]),
        ossl("outside the BMP", "/CN=😀 𝄞", &[u8]),
        ossl("NBSP, U+2028, BOM", "/CN=\u{a0}x\u{2028}\u{feff}", &[u8]),
        ossl(
            "non-ASCII with escapes",
            "/CN=Ünïcødé\\, “quoted” <tag>;",
            &[u8],
        ),
        ossl("PrintableString (mask default)", "/CN=ascii/C=DE", def),
        ossl("TeletexString, ASCII (mask default)", "/CN=a@b", def),
        ossl(
            "TeletexString, Latin-1 bytes (mask default)",
            "/CN=é/O=Müller",
            def,
        ),
        ossl("BMPString, CJK (mask default)", "/CN=中文", def),
        ossl("BMPString, Latin-1 (mask pkix)", "/CN=héllo", pkix),
        ossl("BMPString, ASCII with @ (mask pkix)", "/OU=a@b", pkix),
        ossl(
            "UTF8String everywhere (mask utf8only)",
            "/CN=a/C=US/DC=com",
            utf8only,
        ),
        ossl(
            "IA5String DC, UID keyword",
            "/UID=user1/DC=example/DC=org",
            &[],
        ),
        ossl(
            "emailAddress, serialNumber, title",
            "/emailAddress=a@b.example/serialNumber=12345/title=Dr/CN=dev",
            &[],
        ),
        ossl(
            "surname, givenName, initials, generationQualifier",
            "/SN=Doe/GN=Jane/initials=JD/generationQualifier=III",
            &[],
        ),
        ossl(
            "dnQualifier, pseudonym, name, postalCode, businessCategory",
            "/dnQualifier=q/pseudonym=p/name=n/postalCode=12345/businessCategory=b",
            &[],
        ),
        ossl("street, L, ST", "/street=1 Main St./L=Town/ST=State", &[]),
        ossl("unknown attribute type", "/myattr=val/CN=x", def),
        ossl("unknown type, non-BMP (UniversalString)", "/myattr=😀", def),
        ossl("huge OID arc", "/bigattr=v", def),
        ossl(
            "200-byte value (long-form length in hex)",
            LONG_MYATTR,
            utf8only,
        ),
        ossl(
            "64-character CN",
            "/CN=0123456789012345678901234567890123456789012345678901234567890123",
            &[],
        ),
        ossl("same type twice, separate RDNs", "/OU=a/OU=b/OU=a", &[]),
        ossl(
            "ten RDNs",
            "/DC=a/DC=b/DC=c/O=d/OU=e/OU=f/L=g/ST=h/C=US/CN=i",
            &[],
        ),
        ossl("slash inside", "/CN=a\\/b", &[]),
        ossl("quote and backslash only", "/CN=\"\\\\\"", &[]),
        ossl(
            "multi-valued, keyword and OID types",
            "/CN=x+emailAddress=e@x+UID=u",
            &[mv],
        ),
    ];
    let n = compare("ossl", &cases);
    println!("{n} openssl subjects equal to Java's");
}

const LONG_MYATTR: &str = "/myattr=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

#[test]
fn written_subjects_match_java() {
    let s = |tag: u8, bytes: &[u8]| tlv(tag, bytes);
    let bmp = |text: &str| {
        s(
            0x1e,
            &text
                .encode_utf16()
                .flat_map(u16::to_be_bytes)
                .collect::<Vec<_>>(),
        )
    };
    let universal = |text: &str| {
        s(
            0x1c,
            &text
                .chars()
                .flat_map(|c| u32::from(c).to_be_bytes())
                .collect::<Vec<_>>(),
        )
    };
    let oid_of_len = |len: usize| {
        // 0x2a (1.2), then `len - 1` single-byte arcs.
        let mut content = vec![0x2a];
        content.resize(len, 0x05);
        let mut v = vec![0x06, 0x82, (len >> 8) as u8, len as u8];
        v.extend(content);
        v
    };
    let raw_ava = |oid: Vec<u8>, value: Vec<u8>| tlv(0x30, &[oid, value].concat());
    let cases = vec![
        der(
            "multi-valued RDN not in DER order (Java keeps the order)",
            name(&[rdn(&[
                ava(O, &utf8("o")),
                ava(CN, &utf8("c")),
                ava(OU, &utf8("u")),
            ])]),
        ),
        der(
            "multi-valued RDN in DER order",
            name(&[rdn(&[ava(CN, &utf8("c")), ava(O, &utf8("o"))])]),
        ),
        der("BMPString (read as UTF-8 by Java)", cn(bmp("héllo中"))),
        der("BMPString, odd length", cn(s(0x1e, b"\0a\0"))),
        der("UniversalString under CN (hex)", cn(universal("ab"))),
        der("VisibleString (hex)", cn(s(0x1a, b"ab"))),
        der("NumericString (hex)", cn(s(0x12, b"12"))),
        der("GeneralString, Latin-1 byte", cn(s(0x1b, b"caf\xe9"))),
        der(
            "PrintableString with characters it may not hold",
            cn(s(0x13, b"a@b_c*\xe9")),
        ),
        der("IA5String under CN", cn(s(0x16, b" #x "))),
        der("NUL inside and at the ends", cn(utf8("\0a\0b\0"))),
        der("CR and spaces around", cn(utf8("\r a \r"))),
        der("control characters", cn(utf8("\x01\x1b\t\n\x7f"))),
        der(
            "every character Java escapes",
            cn(utf8(" #a,b=c+d<e>f;g\"h\\i# ")),
        ),
        der("empty value", cn(utf8(""))),
        der("one space", cn(utf8(" "))),
        der("a lone #", cn(utf8("#"))),
        der("trailing backslash and space", cn(utf8("x\\ "))),
        der(
            "malformed UTF-8",
            cn(s(0x0c, b"a\xff\xc3b\xed\xa0\x80c\xf0\x9f\x98")),
        ),
        der(
            "CESU-8 surrogate pair",
            cn(s(0x0c, b"\xed\xa0\xbd\xed\xb8\x80")),
        ),
        der(
            "overlong encodings",
            cn(s(0x0c, b"\xc0\xaf\xe0\x80\xaf\xf0\x80\x80\xaf")),
        ),
        der("INTEGER under CN", cn(s(0x02, b"\x05"))),
        der("NULL under CN", cn(vec![0x05, 0x00])),
        der("BOOLEAN under CN", cn(s(0x01, b"\xff"))),
        der("SEQUENCE under CN", cn(s(0x30, &utf8("x")))),
        der("context tag under CN", cn(s(0x80, b"x"))),
        der("constructed UTF8String", cn(s(0x2c, &utf8("x")))),
        der(
            "unknown OID with a UTF8String",
            name(&[rdn(&[ava("1.2.3.4", &utf8("x"))])]),
        ),
        der("OID 0.39", name(&[rdn(&[ava("0.39.1", &utf8("x"))])])),
        der("OID 1.0", name(&[rdn(&[ava("1.0", &utf8("x"))])])),
        der("OID 2.40", name(&[rdn(&[ava("2.40.5", &utf8("x"))])])),
        der(
            "OID arc over 2^64",
            name(&[rdn(&[ava("2.999.18446744073709551616.1", &utf8("x"))])]),
        ),
        der(
            "OID whose first subidentifier is 2^63",
            name(&[rdn(&[raw_ava(
                s(0x06, b"\x81\x80\x80\x80\x80\x80\x80\x80\x80\x00\x01"),
                utf8("x"),
            )])]),
        ),
        der(
            "OID of 4096 bytes",
            name(&[rdn(&[raw_ava(oid_of_len(4096), utf8("x"))])]),
        ),
        der(
            "OID of 4097 bytes (Java refuses)",
            name(&[rdn(&[raw_ava(oid_of_len(4097), utf8("x"))])]),
        ),
        der(
            "DC as IA5String with a comma",
            name(&[rdn(&[ava("0.9.2342.19200300.100.1.25", &s(0x16, b"a,b"))])]),
        ),
        der("empty name", name(&[])),
        der(
            "empty RDN between two",
            name(&[
                rdn(&[ava(CN, &utf8("a"))]),
                rdn(&[]),
                rdn(&[ava(O, &utf8("b"))]),
            ]),
        ),
        der("only an empty RDN", name(&[rdn(&[])])),
        der(
            "the same RDN twice",
            name(&[rdn(&[ava(CN, &utf8("a"))]), rdn(&[ava(CN, &utf8("a"))])]),
        ),
        der(
            "non-minimal length of a string value",
            cn(vec![0x0c, 0x81, 0x01, b'x']),
        ),
        der(
            "non-minimal length of a hex value",
            name(&[rdn(&[ava("1.2.3", &[0x0c, 0x82, 0x00, 0x01, b'x'])])]),
        ),
        der(
            "non-minimal length inside a hex value (kept)",
            name(&[rdn(&[ava("1.2.3", &[0x30, 0x04, 0x0c, 0x81, 0x01, b'x'])])]),
        ),
        der(
            "non-minimal length of an attribute",
            name(&[rdn(&[
                [&[0x30, 0x81, 0x08][..], &oid(CN), &utf8("x")].concat()
            ])]),
        ),
        der(
            "non-minimal length of an RDN",
            name(&[[&[0x31, 0x81, 0x0b][..], &ava(CN, &utf8("ab"))].concat()]),
        ),
        der(
            "non-minimal length of the OID",
            name(&[rdn(&[raw_ava(
                vec![0x06, 0x81, 0x03, 0x55, 0x04, 0x03],
                utf8("x"),
            )])]),
        ),
        der("four length bytes", cn(vec![0x0c, 0x84, 0, 0, 0, 1, b'x'])),
        der(
            "five length bytes (Java refuses)",
            cn(vec![0x0c, 0x85, 0, 0, 0, 0, 1, b'x']),
        ),
        der(
            "multi-byte tag (Java refuses)",
            cn(vec![0x1f, 0x81, 0x01, 0x01, b'x']),
        ),
        der(
            "RDN that is not a SET (Java refuses)",
            name(&[tlv(0x30, &ava(CN, &utf8("a")))]),
        ),
        der(
            "attribute that is not a SEQUENCE (Java refuses)",
            name(&[rdn(&[tlv(0x31, &[oid(CN), utf8("a")].concat())])]),
        ),
        der(
            "NULL beside an attribute (Java refuses)",
            name(&[rdn(&[ava(CN, &utf8("a")), vec![0x05, 0x00]])]),
        ),
        der(
            "NULL beside an RDN (Java refuses)",
            name(&[rdn(&[ava(CN, &utf8("a"))]), vec![0x05, 0x00]]),
        ),
        der(
            "attribute with two values (Java refuses)",
            name(&[rdn(&[tlv(0x30, &[oid(CN), utf8("x"), utf8("y")].concat())])]),
        ),
        der(
            "attribute without a value (Java refuses)",
            name(&[rdn(&[tlv(0x30, &oid(CN))])]),
        ),
        der(
            "type that is not an OID (Java refuses)",
            name(&[rdn(&[tlv(0x30, &[utf8("CN"), utf8("x")].concat())])]),
        ),
        der(
            "zero-padded OID arc (Java refuses)",
            name(&[rdn(&[raw_ava(s(0x06, b"\x2a\x80\x03"), utf8("x"))])]),
        ),
        der(
            "empty OID (Java refuses)",
            name(&[rdn(&[raw_ava(s(0x06, b""), utf8("x"))])]),
        ),
        der(
            "unterminated OID (Java refuses)",
            name(&[rdn(&[raw_ava(s(0x06, b"\x2a\x83"), utf8("x"))])]),
        ),
        der(
            "subject tagged SET (Java refuses)",
            tlv(0x31, &rdn(&[ava(CN, &utf8("a"))])),
        ),
        der(
            "subject tagged [0] (Java refuses)",
            tlv(0xa0, &rdn(&[ava(CN, &utf8("a"))])),
        ),
        der(
            "value cut short (Java refuses)",
            name(&[rdn(&[tlv(
                0x30,
                &[oid(CN), vec![0x0c, 0x05, b'x']].concat(),
            )])]),
        ),
        case(
            "bytes after a bare name (Java ignores them)",
            Subject::NameOnly([cn(utf8("a")), vec![0x00], cn(utf8("b"))].concat()),
        ),
        Case {
            label: "indefinite length (BER): Java reads it, paddock refuses".into(),
            subject: Subject::Der(cn(vec![0x2c, 0x80, 0x0c, 0x01, b'x', 0x00, 0x00])),
            expect: Expect::PaddockRefuses,
        },
    ];
    let n = compare("der", &cases);
    println!("{n} written subjects (as certificates and as bare names) agree with Java");
}

/// Random bytes in every string type and random escape-heavy strings, a certificate each: the
/// UTF-8 decoder's replacement rule and the escaping rule, beyond the cases above.
#[test]
fn random_values_match_java() {
    let mut rng = StdRng::seed_from_u64(0x5eed_2253);
    // Bytes that matter to a UTF-8 decoder and to the escaping, and some ordinary ones.
    let interesting: &[u8] = &[
        0x00, b' ', b'\r', b'#', b',', b'+', b'=', b'\\', b'"', b'<', b'>', b';', b'a', b'Z', 0x7f,
        0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xc3, 0xdf, 0xe0, 0xe1, 0xed, 0xee,
        0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xf7, 0xf8, 0xfe, 0xff,
    ];
    let string_tags = [0x0c, 0x13, 0x14, 0x16, 0x1b, 0x1e];
    let mut cases = Vec::new();
    for i in 0..400 {
        let len = rng.gen_range(0..10);
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                if rng.gen_bool(0.8) {
                    interesting[rng.gen_range(0..interesting.len())]
                } else {
                    rng.gen()
                }
            })
            .collect();
        let tag = string_tags[i % string_tags.len()];
        cases.push(der(
            &format!("tag {tag:#04x}, bytes {}", hex(&bytes)),
            cn(tlv(tag, &bytes)),
        ));
    }
    let n = compare("rand", &cases);
    println!("{n} random values agree with Java");
}
