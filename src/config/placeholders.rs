//! Secrets that are not secret: the placeholders example files ship (`CHANGE-ME`, `changeme`,
//! `example`, `<your token>`), recognised so that no part using one is ever called ready.

/// Words that mark a value copied from an example rather than generated.
const PLACEHOLDER_WORDS: [&str; 8] = [
    "change-me",
    "changeme",
    "change_me",
    "replace-me",
    "replaceme",
    "example",
    "placeholder",
    "your-",
];

/// The fewest characters of an admin token: a guessable one opens the setup and jobs pages.
pub const ADMIN_TOKEN_MIN_CHARS: usize = 16;

/// Whether `value` is a placeholder rather than a secret someone generated: one of the usual
/// words in any case, a `<…>` template, or a single repeated character.
pub fn is_placeholder(value: &str) -> bool {
    let value = value.trim();
    if value.is_empty() {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    let first = value.chars().next();
    let repeated = value.chars().all(|c| Some(c) == first);
    PLACEHOLDER_WORDS.iter().any(|word| lower.contains(word))
        || (value.starts_with('<') && value.ends_with('>'))
        || repeated
}

/// Why `token` cannot guard the admin pages, if it cannot: never the token itself.
pub fn weak_admin_token(token: &str) -> Option<String> {
    if token.is_empty() {
        return None;
    }
    if is_placeholder(token) {
        return Some(
            "server.admin_token is a placeholder from an example: generate one, e.g. \
             `openssl rand -hex 32`"
                .to_owned(),
        );
    }
    let chars = token.chars().count();
    (chars < ADMIN_TOKEN_MIN_CHARS).then(|| {
        format!(
            "server.admin_token has {chars} characters: use at least {ADMIN_TOKEN_MIN_CHARS}, \
             e.g. `openssl rand -hex 32`"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_placeholders_of_example_files_are_recognised_in_any_case() {
        for value in [
            "CHANGE-ME",
            "changeme",
            "Change_Me",
            "replace-me-with-a-token",
            "example",
            "my-example-secret",
            "<your token>",
            "your-token-here",
            "xxxxxxxxxxxxxxxxxxxx",
        ] {
            assert!(is_placeholder(value), "{value}");
        }
    }

    #[test]
    fn generated_secrets_are_not_placeholders() {
        for value in [
            "3f9c2a7d41be08e6c5a1d2f0b7e9c4a8",
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "glpat-xT8kPq3vLm2nR9sW4yZ1",
            "",
        ] {
            assert!(!is_placeholder(value), "{value}");
        }
    }

    #[test]
    fn an_admin_token_must_be_long_and_not_a_placeholder_and_is_never_echoed() {
        assert_eq!(weak_admin_token(""), None, "no token: loopback only");
        assert_eq!(weak_admin_token("3f9c2a7d41be08e6c5a1d2f0b7e9c4a8"), None);
        let placeholder = weak_admin_token("CHANGE-ME").unwrap();
        assert!(placeholder.contains("placeholder"), "{placeholder}");
        let short = weak_admin_token("s3cr3t-t0k3n").unwrap();
        assert!(short.contains("has 12 characters"), "{short}");
        assert!(!short.contains("s3cr3t"), "{short}");
    }
}
