//! Credentials recognised by their shape, whoever they belong to: tokens of GitHub, GitLab,
//! AWS, Slack and model vendors, private key blocks and `Authorization:` header values.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

use super::MASK;

/// Each kind its own group. Word boundaries are ASCII (the tokens are), and each kind has a
/// fixed prefix and a minimum length, so words that merely start like one are left alone.
static CREDENTIAL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        // GitHub: classic, OAuth, user-to-server, installation and refresh tokens; fine-grained.
        r"(?P<github>(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{40,255})(?-u:\b))",
        // GitLab: personal, project/group, deploy, runner, trigger, CI job, feed… tokens.
        r"|(?P<gitlab>(?-u:\b)gl(?:pat|ptt|dt|rt|cbt|ft|imt|agent|soat|oas)-[A-Za-z0-9_.\-]{19,254}[A-Za-z0-9_\-])",
        // AWS access key ids: long-lived (AKIA) and temporary (ASIA).
        r"|(?P<aws>(?-u:\b)(?:AKIA|ASIA)[A-Z0-9]{16}(?-u:\b))",
        // Slack bot, user, app-level and refresh tokens.
        r"|(?P<slack>(?-u:\b)xox[abpr]-[A-Za-z0-9\-]{10,255})",
        // Model vendors' keys: OpenAI (`sk-`, `sk-proj-`), Anthropic (`sk-ant-`) and alike.
        r"|(?P<vendor>(?-u:\b)sk-[A-Za-z0-9_\-]{20,255})",
        // PEM and PGP private keys, to their end line or, cut off, to the end of the text.
        r"|(?P<key>-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\z))",
        // The value of an Authorization header, however the header is written.
        r"|(?P<header>(?i:(?-u:\b)authorization[ \t]*:[ \t]*(?:bearer|token|basic)[ \t]+))(?P<value>[A-Za-z0-9._~+/=\-]{8,})",
    ))
    .expect("the credential patterns compile")
});

/// `text` with every credential-shaped string replaced by [`MASK`] (an `Authorization:`
/// header keeps its name and scheme); borrowed when there is none.
pub(super) fn mask(text: &str) -> Cow<'_, str> {
    CREDENTIAL.replace_all(text, |found: &Captures<'_>| {
        if let Some(header) = found.name("header") {
            return format!("{}{MASK}", header.as_str());
        }
        let whole = &found[0];
        if found.name("vendor").is_some() && !looks_random(&whole[3..]) {
            return whole.to_owned();
        }
        MASK.to_owned()
    })
}

/// Whether the part after a vendor prefix mixes letters and digits, as generated keys do
/// and hyphenated words (`sk-learn-something-long`) do not.
fn looks_random(body: &str) -> bool {
    body.bytes().any(|b| b.is_ascii_digit()) && body.bytes().any(|b| b.is_ascii_alphabetic())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind in the context it shows up in: a CI log line, command output, an issue.
    const SEEN: [&str; 12] = [
        "remote: using ghp_16C7e42F292c6912E7710c838347Ae178B4a for the push",
        "GITHUB_TOKEN=gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "token: ghs_16C7e42F292c6912E7710c838347Ae178B4a.",
        "PAT github_pat_11ABCDEFG0123456789abc_0123456789abcdefghijABCDEFGHIJ0123456789abcdefghijKLMNO",
        "CI_JOB_TOKEN glpat-xY9z_8AbCdEfGhIjKlMn in the log",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "temporary ASIAQWERTYUIOPASDFGH,",
        "slack: xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
        "OPENAI_API_KEY=sk-proj-Ab3dEf6hIj9lMn2pQr5tUv8x",
        "key sk-ant-api03-AbC123dEf456GhI789jKl012MnO",
        "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc' https://api.example",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    ];

    #[test]
    fn every_kind_of_credential_is_masked_where_it_shows_up() {
        let masked: Vec<String> = SEEN.iter().map(|text| mask(text).into_owned()).collect();
        assert_eq!(
            masked,
            [
                "remote: using [REDACTED] for the push",
                "GITHUB_TOKEN=[REDACTED]",
                "token: [REDACTED].",
                "PAT [REDACTED]",
                "CI_JOB_TOKEN [REDACTED] in the log",
                "aws_access_key_id = [REDACTED]",
                "temporary [REDACTED],",
                "slack: [REDACTED]",
                "OPENAI_API_KEY=[REDACTED]",
                "key [REDACTED]",
                "curl -H 'Authorization: Bearer [REDACTED]' https://api.example",
                "[REDACTED]",
            ]
        );
    }

    #[test]
    fn a_private_key_cut_off_by_the_log_is_masked_to_the_end() {
        let log = "deploying\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n… (cut)";
        assert_eq!(mask(log), "deploying\n[REDACTED]");
    }

    #[test]
    fn look_alikes_are_left_alone() {
        for text in [
            "ghp_short is not a token",
            "the ghp_ prefix, and xghp_16C7e42F292c6912E7710c838347Ae178B4aX",
            "glpat-short",
            "AKIA1234 and AKIAIOSFODNN7EXAMPLEX and MY_AKIAIOSFODNN7EXAMPLE",
            "xoxb-short",
            "scikit: pip install sk-learn-contributions-and-friends",
            "risk-0123456789abcdefghijklmnop and task-0123456789abcdefghijklmnop",
            "the bearer of news; Authorization: Bearer",
            "commit 16c7e42f292c6912e7710c838347ae178b4a0123, uuid 123e4567-e89b-12d3-a456-426614174000",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjAN\n-----END PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
        ] {
            assert_eq!(mask(text), text);
        }
    }

    #[test]
    fn masking_twice_changes_nothing_more() {
        for text in SEEN {
            let once = mask(text).into_owned();
            assert_eq!(mask(&once), once);
        }
    }
}
