//! Redaction: every secret the process knows, in every form it may show up in (as is, reversed,
//! base64 (also reversed), hex, URL-encoded, in an `x-access-token:`/`oauth2:` pair), hidden;
//! and every credential-shaped string, known or not (`credentials`), masked too; and the host's
//! own folders a text may name (a job's working copy), written as the short names people read.

mod credentials;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use secrecy::{ExposeSecret, SecretString};

/// What a secret is replaced with.
pub const MASK: &str = "[REDACTED]";

/// Secrets shorter than this are not searched for: they would hide ordinary words.
pub const MIN_SECRET_LEN: usize = 6;

/// The set of forms to hide, longest first so a longer form is never half-hidden by a shorter.
#[derive(Default, Clone)]
pub struct Redactor {
    needles: Vec<String>,
    /// Folders of this host and what they are shown as, longest first.
    folders: Vec<(String, String)>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} forms)", self.needles.len())
    }
}

impl Redactor {
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Registers `secret` and the forms it takes in basic auth, base64, hex and URLs, and
    /// reversed (as is and in base64). An empty or too-short secret is ignored.
    pub fn register(&mut self, secret: &SecretString) {
        let plain = secret.expose_secret();
        if plain.trim().len() < MIN_SECRET_LEN {
            return;
        }
        let mut forms = vec![plain.to_string(), STANDARD.encode(plain)];
        forms.extend(reversed_forms(plain));
        forms.extend(hex_forms(plain));
        for user in ["x-access-token", "oauth2"] {
            let pair = format!("{user}:{plain}");
            forms.push(STANDARD.encode(&pair));
            forms.push(pair);
        }
        let encoded = percent_encode(plain);
        if encoded != plain {
            forms.push(encoded);
        }
        for form in forms {
            if !self.needles.contains(&form) {
                self.needles.push(form);
            }
        }
        self.needles
            .sort_by_key(|needle| std::cmp::Reverse(needle.len()));
    }

    /// Shows `folder` as `shown_as` wherever a text names it: with the job's working copy shown
    /// as `<work tree>`, a traceback's `/srv/autofix/jobs/7/worktree/tests/test_calc.py` is
    /// posted as `<work tree>/tests/test_calc.py`, so what autofix posts or sends says nothing of
    /// where the host keeps its work.
    pub fn hide_folder(&mut self, folder: &std::path::Path, shown_as: &str) {
        let folder = folder.display().to_string();
        let folder = folder.trim_end_matches('/');
        if folder.is_empty() || self.folders.iter().any(|(known, _)| known == folder) {
            return;
        }
        self.folders.push((folder.to_owned(), shown_as.to_owned()));
        self.folders
            .sort_by_key(|(folder, _)| std::cmp::Reverse(folder.len()));
    }

    /// `text` with every registered form, then every credential-shaped string (a token of
    /// GitHub, GitLab, AWS, Slack or a model vendor, a private key, an `Authorization:`
    /// header's value), replaced by [`MASK`], and every hidden folder by its short name.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (folder, shown_as) in &self.folders {
            if out.contains(folder.as_str()) {
                out = out.replace(folder.as_str(), shown_as);
            }
        }
        for needle in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), MASK);
            }
        }
        match credentials::mask(&out) {
            std::borrow::Cow::Borrowed(_) => out,
            std::borrow::Cow::Owned(masked) => masked,
        }
    }
}

/// `text` in reverse character order, as is and base64-encoded: what a model told to "spell it
/// backwards" prints.
fn reversed_forms(text: &str) -> [String; 2] {
    let reversed: String = text.chars().rev().collect();
    let encoded = STANDARD.encode(&reversed);
    [reversed, encoded]
}

/// The hex encoding of `text`'s UTF-8 bytes, in lower case and in upper case.
fn hex_forms(text: &str) -> [String; 2] {
    let lower: String = text.bytes().map(|byte| format!("{byte:02x}")).collect();
    let upper = lower.to_ascii_uppercase();
    [lower, upper]
}

/// RFC 3986 percent-encoding of everything but unreserved characters.
fn percent_encode(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn redactor(secrets: &[&str]) -> Redactor {
        let mut redactor = Redactor::new();
        for secret in secrets {
            redactor.register(&SecretString::from(secret.to_string()));
        }
        redactor
    }

    #[test]
    fn a_token_is_hidden_as_is_and_in_its_basic_auth_and_base64_forms() {
        let token = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        let redactor = redactor(&[token]);
        let basic = STANDARD.encode(format!("x-access-token:{token}"));
        let text = format!(
            "push failed: https://x-access-token:{token}@github.com/o/r.git\nAuthorization: Basic {basic}\nraw {token}"
        );
        let hidden = redactor.redact(&text);
        assert!(!hidden.contains(token), "{hidden}");
        assert!(!hidden.contains(&basic), "{hidden}");
        assert_eq!(hidden.matches(MASK).count(), 3, "{hidden}");
    }

    #[test]
    fn gitlab_oauth2_pairs_and_url_encoded_secrets_are_hidden() {
        let token = "glpat-abc/def+ghi=";
        let redactor = redactor(&[token]);
        let text = format!(
            "{} and {}",
            STANDARD.encode(format!("oauth2:{token}")),
            "glpat-abc%2Fdef%2Bghi%3D"
        );
        assert_eq!(redactor.redact(&text), format!("{MASK} and {MASK}"));
    }

    #[test]
    fn a_secret_printed_reversed_or_hex_encoded_is_hidden_too() {
        let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        let redactor = redactor(&[token]);
        let reversed: String = token.chars().rev().collect();
        let reversed_base64 = STANDARD.encode(&reversed);
        let lower_hex: String = token.bytes().map(|byte| format!("{byte:02x}")).collect();
        let upper_hex = lower_hex.to_uppercase();
        let forms = [&reversed, &reversed_base64, &lower_hex, &upper_hex];
        let text = format!(
            "backwards: {reversed}\nthen in base64: {reversed_base64}\n\
             hex: {lower_hex}\nHEX: {upper_hex}\nagain {reversed}"
        );
        let hidden = redactor.redact(&text);
        for form in forms {
            assert!(
                !hidden.contains(form.as_str()),
                "{form} survived in {hidden}"
            );
        }
        assert_eq!(hidden.matches(MASK).count(), 5, "{hidden}");
        assert!(
            hidden.starts_with(&format!("backwards: {MASK}\n")),
            "{hidden}"
        );
    }

    #[test]
    fn a_token_spelled_backwards_next_to_its_plain_form_hides_both() {
        let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        let redactor = redactor(&[token]);
        let reversed: String = token.chars().rev().collect();
        let text = format!("the token is {token}, or {reversed} read right to left");
        assert_eq!(
            redactor.redact(&text),
            format!("the token is {MASK}, or {MASK} read right to left")
        );
    }

    #[test]
    fn a_non_ascii_secret_is_hex_encoded_from_its_utf8_bytes() {
        let secret = "pässwörd-42";
        let redactor = redactor(&[secret]);
        let text = "dump: 70c3a4737377c3b67264 2d3432 and 70C3A4737377C3B672642D3432";
        assert_eq!(
            redactor.redact(text),
            format!("dump: 70c3a4737377c3b67264 2d3432 and {MASK}")
        );
        assert_eq!(redactor.redact("70c3a4737377c3b672642d3432"), MASK);
        assert_eq!(redactor.redact("24-dröwssäp"), MASK);
    }

    #[test]
    fn short_or_empty_secrets_hide_nothing() {
        let redactor = redactor(&["", "abc"]);
        assert_eq!(redactor.redact("abc is a word"), "abc is a word");
    }

    #[test]
    fn credentials_nobody_registered_are_masked_too() {
        let redactor = redactor(&["sk-very-secret-key"]);
        assert_eq!(
            redactor.redact("key sk-very-secret-key, and AKIAIOSFODNN7EXAMPLE from the CI log"),
            format!("key {MASK}, and {MASK} from the CI log")
        );
    }

    #[test]
    fn text_without_secrets_is_unchanged() {
        let redactor = redactor(&["sk-very-secret-key"]);
        assert_eq!(redactor.redact("all good here"), "all good here");
    }

    #[test]
    fn a_traceback_names_the_work_tree_not_where_the_host_keeps_it() {
        let mut redactor = Redactor::new();
        redactor.hide_folder(Path::new("/srv/autofix/jobs/7"), "<job folder>");
        redactor.hide_folder(Path::new("/srv/autofix/jobs/7/worktree/"), "<work tree>");
        let traceback = "File \"/srv/autofix/jobs/7/worktree/tests/test_calc.py\", line 4\n\
                         cache at /srv/autofix/jobs/7/cache\n";
        assert_eq!(
            redactor.redact(traceback),
            "File \"<work tree>/tests/test_calc.py\", line 4\ncache at <job folder>/cache\n"
        );
    }
}
