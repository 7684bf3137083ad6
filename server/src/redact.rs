//! Which configuration values are secret, and configuration as the AdminServer and the
//! four-letter words show it: secret values replaced by `******`, everything else byte for byte.
//!
//! ZooKeeper redacts nothing: its `initial_configuration` is the zoo.cfg text as read, superDigest
//! and `ssl.*.password` included, for anyone who can reach the AdminServer. paddock prints what
//! such a redaction would look like in ZooKeeper's own format, so tools that read these views
//! keep working: the key stays, only its value is masked. Pure.

/// What a secret value is shown as.
pub const MASK: &str = "******";

/// Whether `key`'s value is secret: any key containing "password" (any case) but a
/// `*passwordPath` one (a file name: the secret is in the file), and the super user's digest
/// (a SHA-1 password hash, guessable offline). A `zookeeper.` prefix is ignored, as config does.
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let k = k.strip_prefix("zookeeper.").unwrap_or(&k);
    (k.contains("password") && !k.ends_with("passwordpath"))
        || k == "digestauthenticationprovider.superdigest"
}

/// `(key, value)` pairs with each secret value masked.
pub fn pairs(lines: Vec<(String, String)>) -> Vec<(String, String)> {
    lines
        .into_iter()
        .map(|(k, v)| {
            if is_secret_key(&k) {
                (k, MASK.to_string())
            } else {
                (k, v)
            }
        })
        .collect()
}

/// zoo.cfg text (Java properties) with the value of each secret key replaced by `MASK`. Keys are
/// found as `config::parse_properties` finds them (up to the first `=`, `:` or whitespace);
/// the key, the separator, the spacing, comments, other lines and line ends are kept as they
/// are. A secret value continued over several lines (trailing `\`) becomes one `MASK` ending
/// with the last of those lines' line end. An empty value is left as it is.
pub fn properties_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n');
    while let Some(line) = lines.next() {
        let body = line.trim_end_matches(['\n', '\r']);
        let content = body.trim_start();
        let is_entry =
            !(content.is_empty() || content.starts_with('#') || content.starts_with('!'));
        let key_end = content
            .find(|c: char| c == '=' || c == ':' || c.is_whitespace())
            .unwrap_or(content.len());
        if !is_entry || !is_secret_key(&content[..key_end]) {
            // Copied whole, with any continuation lines (a value can hold a '#').
            out.push_str(line);
            let mut cur = body;
            while is_entry && continues(cur) {
                let Some(next) = lines.next() else { break };
                out.push_str(next);
                cur = next.trim_end_matches(['\n', '\r']);
            }
            continue;
        }
        let value_start = value_start(body, body.len() - content.len() + key_end);
        let mut end = &line[body.len()..];
        let mut cur = body;
        let mut continued = false;
        while continues(cur) {
            let Some(next) = lines.next() else { break };
            continued = true;
            cur = next.trim_end_matches(['\n', '\r']);
            end = &next[cur.len()..];
        }
        if value_start == body.len() && !continued {
            out.push_str(line);
            continue;
        }
        out.push_str(&body[..value_start]);
        out.push_str(MASK);
        out.push_str(end);
    }
    out
}

/// Where the value starts in `body` once the key ends at `key_end`: after whitespace, one `=`
/// or `:`, and whitespace again (`java.util.Properties.load`).
fn value_start(body: &str, key_end: usize) -> usize {
    let skip_ws = |at: usize| {
        at + body[at..].len() - body[at..].trim_start_matches([' ', '\t', '\x0c']).len()
    };
    let mut at = skip_ws(key_end);
    if body[at..].starts_with(['=', ':']) {
        at = skip_ws(at + 1);
    }
    at
}

/// A line whose odd run of trailing backslashes continues it on the next.
fn continues(body: &str) -> bool {
    body.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_keys() {
        for k in [
            "DigestAuthenticationProvider.superDigest",
            "zookeeper.DigestAuthenticationProvider.superDigest",
            "SASLAuthenticationProvider.superPassword",
            "ssl.keyStore.password",
            "ssl.quorum.trustStore.password",
            "zookeeper.ssl.keyStore.password",
            "somePASSWORDthing",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        for k in [
            "ssl.keyStore.passwordPath",
            "ssl.quorum.keyStore.passwordPath",
            "dataDir",
            "superUser",
            "ssl.keyStore.location",
            "4lw.commands.whitelist",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn masks_secret_values_and_keeps_every_other_byte() {
        let text = "# zoo.cfg\r\n\
                    tickTime=2000\r\n\
                    DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n\
                    \x20 ssl.keyStore.password : hunter2  \n\
                    zookeeper.SASLAuthenticationProvider.superPassword\tsecret\n\
                    ssl.keyStore.passwordPath=/etc/zk/pw\n\
                    ssl.trustStore.password=\n\
                    ! ssl.keyStore.password=commented\n\
                    ssl.quorum.keyStore.password=part1\\\n\
                    \x20   part2\n\
                    note=a\\\n\
                    ssl.keyStore.password=not-a-key-but-the-notes-value\n\
                    dataDir=/var/zk";
        let want = "# zoo.cfg\r\n\
                    tickTime=2000\r\n\
                    DigestAuthenticationProvider.superDigest=******\n\
                    \x20 ssl.keyStore.password : ******\n\
                    zookeeper.SASLAuthenticationProvider.superPassword\t******\n\
                    ssl.keyStore.passwordPath=/etc/zk/pw\n\
                    ssl.trustStore.password=\n\
                    ! ssl.keyStore.password=commented\n\
                    ssl.quorum.keyStore.password=******\n\
                    note=a\\\n\
                    ssl.keyStore.password=not-a-key-but-the-notes-value\n\
                    dataDir=/var/zk";
        assert_eq!(properties_text(text), want);
    }

    #[test]
    fn text_without_secrets_is_unchanged() {
        let text = "tickTime=2000\ndataDir=/d\n\n  # c\nserver.1=h:1:2\n";
        assert_eq!(properties_text(text), text);
        assert_eq!(properties_text(""), "");
    }

    #[test]
    fn pairs_mask_by_key() {
        let got = pairs(vec![
            ("clientPort".into(), "2181".into()),
            ("ssl.keyStore.password".into(), "x".into()),
        ]);
        assert_eq!(
            got,
            vec![
                ("clientPort".to_string(), "2181".to_string()),
                ("ssl.keyStore.password".to_string(), MASK.to_string()),
            ]
        );
    }
}
