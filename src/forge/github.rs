//! GitHub's webhook edge: `X-Hub-Signature-256` verification over the raw body, the delivery
//! id, and turning `issues`/`labeled` deliveries into [`BotEvent`]s.

use super::webhook::{
    Fields, Wanted, delivery_id_header, hmac_sha256_matches, parse_object, printable, same_label,
    usable_secrets,
};
use super::{
    BotEvent, DeliveryId, ForgeKind, ForgeUser, IssueNumber, RepoRef, WebhookAuthError,
    WebhookParseError,
};
use reqwest::header::HeaderMap;
use secrecy::SecretString;

pub const SIGNATURE_HEADER: &str = "X-Hub-Signature-256";
pub const SHA1_SIGNATURE_HEADER: &str = "X-Hub-Signature";
pub const EVENT_HEADER: &str = "X-GitHub-Event";
pub const DELIVERY_HEADER: &str = "X-GitHub-Delivery";

const SHA256_HEX_DIGITS: usize = 64;

/// What [`parse_issues_event`] reads of an `issues` delivery; the rest is only checked to be JSON.
const ISSUES_EVENT: Wanted = Wanted {
    keys: &[
        ("action", Wanted::VALUE),
        ("label", NAMED),
        (
            "issue",
            Wanted {
                keys: &[
                    ("number", Wanted::VALUE),
                    ("title", Wanted::VALUE),
                    ("body", Wanted::VALUE),
                    (
                        "labels",
                        Wanted {
                            keys: &[],
                            items: Some(&NAMED),
                        },
                    ),
                    ("state", Wanted::VALUE),
                    ("locked", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        (
            "repository",
            Wanted {
                keys: &[
                    ("full_name", Wanted::VALUE),
                    ("clone_url", Wanted::VALUE),
                    ("default_branch", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        (
            "sender",
            Wanted {
                keys: &[
                    ("login", Wanted::VALUE),
                    ("type", Wanted::VALUE),
                    ("id", Wanted::VALUE),
                ],
                items: None,
            },
        ),
    ],
    items: None,
};
/// A label: only its name.
const NAMED: Wanted = Wanted {
    keys: &[("name", Wanted::VALUE)],
    items: None,
};

/// Checks `X-Hub-Signature-256: sha256=<hex>` against the HMAC-SHA256 of the raw body under
/// each configured secret in turn, so a secret can be rotated without dropping deliveries.
pub fn verify_signature(
    secrets: &[SecretString],
    body: &[u8],
    header: Option<&str>,
) -> Result<(), WebhookAuthError> {
    let secrets = usable_secrets(secrets)?;
    let header = header.ok_or(WebhookAuthError::MissingSignature)?;
    let expected = decode_signature(header.trim())?;
    if secrets
        .iter()
        .any(|secret| hmac_sha256_matches(secret, body, &expected))
    {
        Ok(())
    } else {
        Err(WebhookAuthError::SignatureMismatch)
    }
}

/// [`verify_signature`] reading the headers itself, so a delivery signed only with SHA-1
/// (`X-Hub-Signature`) is told apart from an unsigned one.
pub fn verify_request(
    secrets: &[SecretString],
    body: &[u8],
    headers: &HeaderMap,
) -> Result<(), WebhookAuthError> {
    let signature = headers.get(SIGNATURE_HEADER);
    if signature.is_none() && headers.contains_key(SHA1_SIGNATURE_HEADER) {
        usable_secrets(secrets)?;
        return Err(WebhookAuthError::Sha1Only);
    }
    // Lossy decoding keeps a non-ASCII byte visible as the first non-hex digit.
    let signature = signature.map(|value| String::from_utf8_lossy(value.as_bytes()));
    verify_signature(secrets, body, signature.as_deref())
}

fn decode_signature(header: &str) -> Result<Vec<u8>, WebhookAuthError> {
    let Some(hex_digits) = header.strip_prefix("sha256=") else {
        return Err(scheme_error(header));
    };
    if let Some((position, found)) = hex_digits
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    {
        return Err(WebhookAuthError::MalformedHex { position, found });
    }
    if hex_digits.len() != SHA256_HEX_DIGITS {
        return Err(WebhookAuthError::WrongLength {
            found: hex_digits.len(),
        });
    }
    hex::decode(hex_digits).map_err(|_| WebhookAuthError::WrongLength {
        found: hex_digits.len(),
    })
}

fn scheme_error(header: &str) -> WebhookAuthError {
    let scheme = header.split_once('=').map_or(header, |(scheme, _)| scheme);
    if scheme.eq_ignore_ascii_case("sha1") {
        return WebhookAuthError::Sha1Only;
    }
    // Only the scheme is echoed, and briefly: the rest is attacker-chosen and may be long.
    WebhookAuthError::UnknownScheme {
        found: scheme.chars().take(16).collect(),
    }
}

/// The `X-GitHub-Delivery` GUID, which a redelivery of the same event repeats.
pub fn delivery_id(headers: &HeaderMap) -> Result<DeliveryId, WebhookParseError> {
    delivery_id_header(headers, DELIVERY_HEADER)?.ok_or(WebhookParseError::MissingHeader {
        header: DELIVERY_HEADER,
    })
}

/// Reads one verified delivery: `event_header` is `X-GitHub-Event`. Only `issues`/`labeled`
/// with the trigger label (compared case-insensitively) starts a job; every body must still be
/// a readable JSON object, so garbage is never silently accepted as "ignored".
pub fn parse_event(
    event_header: &str,
    body: &[u8],
    trigger_label: &str,
) -> Result<BotEvent, WebhookParseError> {
    let event = event_header.trim();
    if event.is_empty() {
        return Err(WebhookParseError::MissingHeader {
            header: EVENT_HEADER,
        });
    }
    let wanted = if event == "issues" {
        &ISSUES_EVENT
    } else {
        // Other events: the body must still be a JSON object, but nothing of it is read.
        &Wanted::VALUE
    };
    let payload = parse_object(body, wanted)?;
    let fields = Fields::new(&payload);
    match event {
        "ping" => Ok(BotEvent::ignored(
            "ping: GitHub checking that the webhook is reachable",
        )),
        "issues" => parse_issues_event(&fields, trigger_label),
        other => Ok(BotEvent::ignored(format!(
            "`{}` events do not start jobs",
            printable(other)
        ))),
    }
}

fn parse_issues_event(
    fields: &Fields<'_>,
    trigger_label: &str,
) -> Result<BotEvent, WebhookParseError> {
    let action = fields.str("action")?;
    if action != "labeled" {
        return Ok(BotEvent::ignored(format!(
            "issues event with action `{}`; only `labeled` starts a job",
            printable(action)
        )));
    }
    let label = fields.str("label.name")?;
    if !same_label(label, trigger_label) {
        return Ok(BotEvent::ignored(format!(
            "label `{}` is not the trigger label `{trigger_label}`",
            printable(label)
        )));
    }
    Ok(BotEvent::IssueLabeled {
        repo: repo_ref(fields)?,
        issue: IssueNumber(fields.u64("issue.number")?),
        title: fields.str("issue.title")?.to_owned(),
        body: fields
            .optional_str("issue.body")?
            .unwrap_or_default()
            .to_owned(),
        labels: fields.names("issue.labels", "name")?,
        label_added: label.to_owned(),
        actor: sender(fields)?,
        state_open: fields.str("issue.state")? == "open",
        locked: fields.bool("issue.locked")?,
    })
}

fn repo_ref(fields: &Fields<'_>) -> Result<RepoRef, WebhookParseError> {
    Ok(RepoRef {
        forge: ForgeKind::GitHub,
        owner_path: fields.str("repository.full_name")?.to_owned(),
        clone_url: fields.str("repository.clone_url")?.to_owned(),
        default_branch: fields
            .optional_str("repository.default_branch")?
            .map(str::to_owned),
    })
}

fn sender(fields: &Fields<'_>) -> Result<ForgeUser, WebhookParseError> {
    let login = fields.str("sender.login")?;
    let is_bot_account = fields
        .optional("sender.type")?
        .and_then(|kind| kind.as_str())
        .is_some_and(|kind| kind == "Bot");
    Ok(ForgeUser {
        login: login.to_owned(),
        id: fields.u64("sender.id")?,
        is_bot: is_bot_account || login.ends_with("[bot]"),
    })
}
