//! GitLab's webhook edge: the `X-Gitlab-Token` shared secret, the delivery id, and turning
//! issue hooks whose label change adds the trigger label into [`BotEvent`]s.

use reqwest::header::HeaderMap;
use secrecy::SecretString;

use super::webhook::{
    Fields, Wanted, delivery_id_header, parse_object, printable, same_label, token_matches,
    usable_secrets,
};
use super::{
    BotEvent, DeliveryId, ForgeKind, ForgeUser, IssueNumber, RepoRef, WebhookAuthError,
    WebhookParseError,
};

pub const TOKEN_HEADER: &str = "X-Gitlab-Token";
pub const EVENT_HEADER: &str = "X-Gitlab-Event";
pub const IDEMPOTENCY_HEADER: &str = "Idempotency-Key";
pub const EVENT_UUID_HEADER: &str = "X-Gitlab-Event-UUID";

/// What [`parse_issue_hook`] reads of an issue hook; the rest is only checked to be JSON.
const ISSUE_HOOK: Wanted = Wanted {
    keys: &[
        (
            "object_attributes",
            Wanted {
                keys: &[
                    ("type", Wanted::VALUE),
                    ("iid", Wanted::VALUE),
                    ("title", Wanted::VALUE),
                    ("description", Wanted::VALUE),
                    ("state", Wanted::VALUE),
                    ("discussion_locked", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        (
            "changes",
            Wanted {
                keys: &[(
                    "labels",
                    Wanted {
                        keys: &[("previous", TITLES), ("current", TITLES)],
                        items: None,
                    },
                )],
                items: None,
            },
        ),
        (
            "project",
            Wanted {
                keys: &[
                    ("path_with_namespace", Wanted::VALUE),
                    ("git_http_url", Wanted::VALUE),
                    ("default_branch", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        (
            "user",
            Wanted {
                keys: &[("username", Wanted::VALUE), ("id", Wanted::VALUE)],
                items: None,
            },
        ),
    ],
    items: None,
};
/// A list of labels: only each one's title.
const TITLES: Wanted = Wanted {
    keys: &[],
    items: Some(&Wanted {
        keys: &[("title", Wanted::VALUE)],
        items: None,
    }),
};

/// GitLab does not sign the body: it echoes the secret token, which is compared in constant
/// time against each configured secret (several, so a secret can be rotated).
pub fn verify_token(
    secrets: &[SecretString],
    header: Option<&str>,
) -> Result<(), WebhookAuthError> {
    let secrets = usable_secrets(secrets)?;
    let presented = header.ok_or(WebhookAuthError::MissingToken)?;
    if secrets
        .iter()
        .any(|secret| token_matches(secret, presented.as_bytes()))
    {
        Ok(())
    } else {
        Err(WebhookAuthError::TokenMismatch)
    }
}

/// [`verify_token`] reading `X-Gitlab-Token` from the headers (a non-ASCII value cannot match).
pub fn verify_request(
    secrets: &[SecretString],
    headers: &HeaderMap,
) -> Result<(), WebhookAuthError> {
    let token = headers
        .get(TOKEN_HEADER)
        .map(|value| String::from_utf8_lossy(value.as_bytes()));
    verify_token(secrets, token.as_deref())
}

/// `Idempotency-Key` (GitLab 17.4+, stable across retries), else `X-Gitlab-Event-UUID`.
pub fn delivery_id(headers: &HeaderMap) -> Result<DeliveryId, WebhookParseError> {
    if let Some(id) = delivery_id_header(headers, IDEMPOTENCY_HEADER)? {
        return Ok(id);
    }
    delivery_id_header(headers, EVENT_UUID_HEADER)?.ok_or(WebhookParseError::MissingHeader {
        header: "Idempotency-Key or X-Gitlab-Event-UUID",
    })
}

/// Reads one verified delivery: `event_header` is `X-Gitlab-Event`. An issue hook starts a job
/// only when its `changes.labels` shows the trigger label newly added (case-insensitively).
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
    if !matches!(event, "Issue Hook" | "Confidential Issue Hook") {
        // The body must still be a JSON object, but nothing of it is read.
        parse_object(body, &Wanted::VALUE)?;
        return Ok(BotEvent::ignored(format!(
            "`{}` events do not start jobs",
            printable(event)
        )));
    }
    let payload = parse_object(body, &ISSUE_HOOK)?;
    parse_issue_hook(&Fields::new(&payload), trigger_label)
}

fn parse_issue_hook(
    fields: &Fields<'_>,
    trigger_label: &str,
) -> Result<BotEvent, WebhookParseError> {
    // Work items (tasks, epics, …) arrive as issue hooks too; only issues start jobs.
    if let Some(kind) = fields.optional_str("object_attributes.type")?
        && kind != "Issue"
    {
        return Ok(BotEvent::ignored(format!(
            "work item of type `{}`; only issues start jobs",
            printable(kind)
        )));
    }
    if fields.optional("changes.labels")?.is_none() {
        return Ok(BotEvent::ignored("issue hook without a label change"));
    }
    let previous = fields.names("changes.labels.previous", "title")?;
    let current = fields.names("changes.labels.current", "title")?;
    let Some(added) = current
        .iter()
        .find(|label| same_label(label, trigger_label))
    else {
        return Ok(BotEvent::ignored(format!(
            "the label change does not add the trigger label `{trigger_label}`"
        )));
    };
    if previous
        .iter()
        .any(|label| same_label(label, trigger_label))
    {
        return Ok(BotEvent::ignored(format!(
            "the trigger label `{trigger_label}` was already on the issue"
        )));
    }
    Ok(BotEvent::IssueLabeled {
        repo: repo_ref(fields)?,
        issue: IssueNumber(fields.u64("object_attributes.iid")?),
        title: fields.str("object_attributes.title")?.to_owned(),
        body: fields
            .optional_str("object_attributes.description")?
            .unwrap_or_default()
            .to_owned(),
        label_added: added.clone(),
        labels: current,
        actor: user(fields)?,
        state_open: fields.str("object_attributes.state")? == "opened",
        // GitLab sends null until a discussion has ever been locked.
        locked: fields
            .optional_bool("object_attributes.discussion_locked")?
            .unwrap_or(false),
    })
}

fn repo_ref(fields: &Fields<'_>) -> Result<RepoRef, WebhookParseError> {
    Ok(RepoRef {
        forge: ForgeKind::GitLab,
        owner_path: fields.str("project.path_with_namespace")?.to_owned(),
        clone_url: fields.str("project.git_http_url")?.to_owned(),
        default_branch: fields
            .optional_str("project.default_branch")?
            .map(str::to_owned),
    })
}

fn user(fields: &Fields<'_>) -> Result<ForgeUser, WebhookParseError> {
    let login = fields.str("user.username")?;
    Ok(ForgeUser {
        login: login.to_owned(),
        id: fields.u64("user.id")?,
        is_bot: looks_like_bot(login),
    })
}

/// GitLab's webhook user has no bot flag. Project and group access tokens act as users named
/// `project_<id>_bot_<hash>` / `group_<id>_bot_<hash>`; GitLab's own bots end in `-bot`.
fn looks_like_bot(username: &str) -> bool {
    let token_bot = ["project_", "group_"].iter().any(|prefix| {
        username.strip_prefix(prefix).is_some_and(|rest| {
            let digits = rest.chars().take_while(char::is_ascii_digit).count();
            digits > 0 && rest[digits..].starts_with("_bot")
        })
    });
    token_bot || username.ends_with("-bot")
}
