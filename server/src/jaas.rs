//! JAAS login configuration files, the format the JVM reads from `java.security.auth.login.config`
//! and ZooKeeper reads its SASL users from:
//!
//! ```text
//! Server {
//!     org.apache.zookeeper.server.auth.DigestLoginModule required
//!     user_super="adminsecret"
//!     user_bob="bobsecret";
//! };
//! ```
//!
//! A file is a list of sections (`Name { module flag key=value ... ; ... };`). Comments are
//! `//` and `/* */` as in the JDK's `ConfigFile`, and `#` lines too (a leniency: the JDK rejects
//! them); option values are words or quoted strings (`"..."` or `'...'`) with backslash escapes.
//! Words are letters, digits and `. _ $ - *`, so a `user_<name>` key never holds `@` or `/`. Anything else is an error naming the line,
//! so a typo stops the server at start-up instead of silently disabling authentication.
//! `${property}` expansion inside values is not done (ZooKeeper deployments rarely use it).

use std::collections::BTreeMap;

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
#[error("line {line}: {reason}")]
pub struct JaasError {
    pub line: usize,
    pub reason: String,
}

/// One login module line of a section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    pub flag: ControlFlag,
    /// Later duplicates of a key replace earlier ones, as in the JDK's option map.
    pub options: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

/// A parsed file: section name → its login modules, in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JaasConfig {
    sections: BTreeMap<String, Vec<LoginModule>>,
}

impl JaasConfig {
    /// Reads and parses the file `java.security.auth.login.config` names; errors name the file
    /// (and, for a syntax error, the line), never a value.
    pub fn read(path: &std::path::Path) -> Result<JaasConfig, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "cannot read the JAAS file {} (java.security.auth.login.config): {e}",
                path.display()
            )
        })?;
        JaasConfig::parse(&text).map_err(|e| format!("JAAS file {}: {e}", path.display()))
    }

    pub fn section(&self, name: &str) -> Option<&[LoginModule]> {
        self.sections.get(name).map(Vec::as_slice)
    }

    pub fn parse(text: &str) -> Result<JaasConfig, JaasError> {
        let tokens = tokenize(text)?;
        let mut p = Parser { tokens, at: 0 };
        let mut sections = BTreeMap::new();
        while !p.done() {
            let (name, line) = p.name("a section name")?;
            p.expect(Tok::Open, "'{' after the section name")?;
            let mut modules = Vec::new();
            while !p.peek_is(&Tok::Close) {
                modules.push(p.module()?);
            }
            p.expect(Tok::Close, "'}'")?;
            p.expect(Tok::Semi, "';' after '}'")?;
            if modules.is_empty() {
                return Err(JaasError {
                    line,
                    reason: format!("section {name:?} lists no login module"),
                });
            }
            if sections.insert(name.clone(), modules).is_some() {
                return Err(JaasError {
                    line,
                    reason: format!("section {name:?} appears more than once"),
                });
            }
        }
        Ok(JaasConfig { sections })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Open,
    Close,
    Semi,
    Eq,
}

/// A token as an error names it: by kind, never by content, since an option value is a
/// password (`user_bob="secret"`), and a misplaced one is what a syntax error finds.
fn describe(t: &Tok) -> String {
    match t {
        Tok::Word(_) => "a word".into(),
        Tok::Quoted(_) => "a quoted string".into(),
        Tok::Open => "'{'".into(),
        Tok::Close => "'}'".into(),
        Tok::Semi => "';'".into(),
        Tok::Eq => "'='".into(),
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '$' | '-' | '*') || (c as u32) >= 160
}

fn tokenize(text: &str) -> Result<Vec<(Tok, usize)>, JaasError> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\n' => line += 1,
            c if c.is_whitespace() => {}
            '#' => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                while chars.peek().is_some_and(|&c| c != '\n') {
                    chars.next();
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                let start = line;
                chars.next();
                let mut prev = ' ';
                loop {
                    match chars.next() {
                        None => {
                            return Err(JaasError {
                                line: start,
                                reason: "unterminated /* comment".into(),
                            })
                        }
                        Some('/') if prev == '*' => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            prev = c;
                        }
                    }
                }
            }
            '"' | '\'' => {
                let (quote, start) = (c, line);
                let mut s = String::new();
                loop {
                    match chars.next() {
                        None => {
                            return Err(JaasError {
                                line: start,
                                reason: "unterminated quoted string".into(),
                            })
                        }
                        Some(q) if q == quote => break,
                        Some('\\') => match chars.next() {
                            None => {
                                return Err(JaasError {
                                    line: start,
                                    reason: "unterminated quoted string".into(),
                                })
                            }
                            Some('n') => s.push('\n'),
                            Some('t') => s.push('\t'),
                            Some('r') => s.push('\r'),
                            Some(c) => s.push(c),
                        },
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            s.push(c);
                        }
                    }
                }
                out.push((Tok::Quoted(s), start));
            }
            '{' => out.push((Tok::Open, line)),
            '}' => out.push((Tok::Close, line)),
            ';' => out.push((Tok::Semi, line)),
            '=' => out.push((Tok::Eq, line)),
            c if is_word_char(c) => {
                let mut w = String::from(c);
                while let Some(&c) = chars.peek() {
                    if !is_word_char(c) {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push((Tok::Word(w), line));
            }
            // The character is not shown: it may be part of an unquoted password.
            _ => {
                return Err(JaasError {
                    line,
                    reason: "a character outside quotes that is not a letter, a digit or one of \
                             . _ $ - * { } ; = (quote option values)"
                        .into(),
                })
            }
        }
    }
    Ok(out)
}

struct Parser {
    tokens: Vec<(Tok, usize)>,
    at: usize,
}

impl Parser {
    fn done(&self) -> bool {
        self.at >= self.tokens.len()
    }

    fn line(&self) -> usize {
        self.tokens
            .get(self.at)
            .or(self.tokens.last())
            .map(|t| t.1)
            .unwrap_or(1)
    }

    fn peek_is(&self, t: &Tok) -> bool {
        self.tokens.get(self.at).is_some_and(|(x, _)| x == t)
    }

    fn fail<T>(&self, wanted: &str) -> Result<T, JaasError> {
        let found = match self.tokens.get(self.at) {
            Some((t, _)) => describe(t),
            None => "the end of the file".into(),
        };
        Err(JaasError {
            line: self.line(),
            reason: format!("expected {wanted}, found {found}"),
        })
    }

    fn expect(&mut self, t: Tok, wanted: &str) -> Result<(), JaasError> {
        if self.peek_is(&t) {
            self.at += 1;
            Ok(())
        } else {
            self.fail(wanted)
        }
    }

    /// A word or quoted string (section names and option values may be either).
    fn name(&mut self, wanted: &str) -> Result<(String, usize), JaasError> {
        match self.tokens.get(self.at) {
            Some((Tok::Word(w) | Tok::Quoted(w), line)) => {
                let out = (w.clone(), *line);
                self.at += 1;
                Ok(out)
            }
            _ => self.fail(wanted),
        }
    }

    fn word(&mut self, wanted: &str) -> Result<String, JaasError> {
        match self.tokens.get(self.at) {
            Some((Tok::Word(w), _)) => {
                let w = w.clone();
                self.at += 1;
                Ok(w)
            }
            _ => self.fail(wanted),
        }
    }

    fn module(&mut self) -> Result<LoginModule, JaasError> {
        let class = self.word("a login module class name")?;
        let flag_line = self.line();
        let flag = match self
            .word("a control flag (required, requisite, sufficient or optional)")?
            .to_ascii_lowercase()
            .as_str()
        {
            "required" => ControlFlag::Required,
            "requisite" => ControlFlag::Requisite,
            "sufficient" => ControlFlag::Sufficient,
            "optional" => ControlFlag::Optional,
            _ => {
                return Err(JaasError {
                    line: flag_line,
                    reason: "the word after the login module class is not a control flag \
                             (required, requisite, sufficient or optional)"
                        .into(),
                })
            }
        };
        let mut options = BTreeMap::new();
        while !self.peek_is(&Tok::Semi) {
            let key = self.word("an option name or ';' ending the module")?;
            // The word is not named: without its '=' it may be the second half of a password
            // that held a space and no quotes.
            self.expect(Tok::Eq, "'=' after the option name")?;
            let (value, _) = self.name(&format!("a value for option {key}"))?;
            options.insert(key, value);
        }
        self.expect(Tok::Semi, "';'")?;
        Ok(LoginModule {
            class,
            flag,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_kazoo_harness_server_section() {
        let text = "\nServer {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n    user_super=\"super_secret\"\n    user_jaasuser=\"jaas_password\";\n};";
        let cfg = JaasConfig::parse(text).unwrap();
        let server = cfg.section("Server").unwrap();
        assert_eq!(server.len(), 1);
        assert_eq!(
            server[0].class,
            "org.apache.zookeeper.server.auth.DigestLoginModule"
        );
        assert_eq!(server[0].flag, ControlFlag::Required);
        assert_eq!(
            server[0].options.get("user_super").map(String::as_str),
            Some("super_secret")
        );
        assert_eq!(
            server[0].options.get("user_jaasuser").map(String::as_str),
            Some("jaas_password")
        );
        assert!(cfg.section("Client").is_none());
    }

    #[test]
    fn empty_file_and_comments_only_have_no_sections() {
        assert_eq!(JaasConfig::parse("").unwrap(), JaasConfig::default());
        assert_eq!(
            JaasConfig::parse("# nothing\n// here\n/* at\nall */\n").unwrap(),
            JaasConfig::default()
        );
    }

    #[test]
    fn several_sections_escapes_and_unquoted_values() {
        let text = r#"
            Client { org.apache.zookeeper.server.auth.DigestLoginModule required username='bob' password="a\"b\\c"; };
            /* the server */ Server {
                org.apache.zookeeper.server.auth.DigestLoginModule Optional user_x=plain; # trailing
                com.example.Other sufficient;
            };"#;
        let cfg = JaasConfig::parse(text).unwrap();
        assert_eq!(cfg.section("Client").unwrap()[0].options["username"], "bob");
        assert_eq!(
            cfg.section("Client").unwrap()[0].options["password"],
            "a\"b\\c"
        );
        let server = cfg.section("Server").unwrap();
        assert_eq!(server.len(), 2);
        assert_eq!(server[0].flag, ControlFlag::Optional);
        assert_eq!(server[0].options["user_x"], "plain");
        assert!(server[1].options.is_empty());
    }

    #[test]
    fn no_mistake_repeats_a_password() {
        // Each file holds the password s3cr3t where a syntax error finds it.
        let cases = [
            "Server {\n m required user_bob=\"s3cr3t\" \"s3cr3t\";\n};",
            "Server {\n m required user_bob=s3cr3t s3cr3t;\n};",
            "Server {\n m required user_bob s3cr3t;\n};",
            "Server {\n m required user_bob=s3cr3t@;\n};",
            "Server {\n m s3cr3t user_bob=\"x\";\n};",
            "Server {\n m required user_bob=\"x\" }\n s3cr3t;",
            "\"s3cr3t\" s3cr3t",
        ];
        for text in cases {
            let err = JaasConfig::parse(text).expect_err(text).to_string();
            assert!(err.starts_with("line "), "{err}");
            assert!(!err.contains("s3cr3t"), "{text}: {err}");
        }
    }

    #[test]
    fn mistakes_name_their_line() {
        let cases = [
            (
                "Server {\n m required user_a=\"x\"\n};",
                3,
                "expected an option name or ';' ending the module, found '}'",
            ),
            (
                "Server {\n m mandatory;\n};",
                2,
                "the word after the login module class is not a control flag (required, requisite, sufficient or optional)",
            ),
            (
                "Server {\n m required;\n}",
                3,
                "expected ';' after '}', found the end of the file",
            ),
            (
                "Server {\n m required a=\"open\n};",
                2,
                "unterminated quoted string",
            ),
            ("Server { };", 1, "section \"Server\" lists no login module"),
            (
                "S { m required; };\nS { m required; };",
                2,
                "section \"S\" appears more than once",
            ),
            (
                "Server {\n m required a=;\n};",
                2,
                "expected a value for option a, found ';'",
            ),
            (
                "Server {\n m required a@b=1;\n};",
                2,
                "a character outside quotes that is not a letter, a digit or one of . _ $ - * { } ; = (quote option values)",
            ),
            ("/* open", 1, "unterminated /* comment"),
        ];
        for (text, line, reason) in cases {
            assert_eq!(
                JaasConfig::parse(text),
                Err(JaasError {
                    line,
                    reason: reason.into()
                }),
                "{text}"
            );
        }
    }
}
