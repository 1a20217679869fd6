//! GitHub's webhook edge: `X-Hub-Signature-256` verification over the raw body, the delivery id,
//! and turning labelled issues, comments, reviews, failed checks and pushes to the default
//! branch into [`BotEvent`]s.

use super::webhook::{
    Fields, Wanted, delivery_id_header, hmac_sha256_matches, parse_object, printable, same_label,
    usable_secrets,
};
use super::{
    BotEvent, Command, CommentId, DEFAULT_COMMAND_WORD, DeliveryId, ForgeKind, ForgeUser,
    IssueNumber, Remark, RepoRef, Said, Thread, Triggers, WebhookAuthError, WebhookParseError,
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
        ("repository", REPOSITORY),
        ("sender", SENDER),
    ],
    items: None,
};
/// What [`parse_issue_comment`] reads of an `issue_comment` delivery.
const ISSUE_COMMENT_EVENT: Wanted = Wanted {
    keys: &[
        ("action", Wanted::VALUE),
        (
            "issue",
            Wanted {
                // Of `pull_request` only whether it is there: it marks a comment on a PR.
                keys: &[("number", Wanted::VALUE), ("pull_request", Wanted::VALUE)],
                items: None,
            },
        ),
        (
            "comment",
            Wanted {
                keys: &[("id", Wanted::VALUE), ("body", Wanted::VALUE)],
                items: None,
            },
        ),
        ("repository", REPOSITORY),
        ("sender", SENDER),
    ],
    items: None,
};
/// What [`parse_review`] reads of a `pull_request_review` delivery.
const REVIEW_EVENT: Wanted = Wanted {
    keys: &[
        ("action", Wanted::VALUE),
        (
            "review",
            Wanted {
                keys: &[
                    ("id", Wanted::VALUE),
                    ("state", Wanted::VALUE),
                    ("body", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        ("pull_request", NUMBERED),
        ("repository", REPOSITORY),
        ("sender", SENDER),
    ],
    items: None,
};
/// What [`parse_review_comment`] reads of a `pull_request_review_comment` delivery.
const REVIEW_COMMENT_EVENT: Wanted = Wanted {
    keys: &[
        ("action", Wanted::VALUE),
        (
            "comment",
            Wanted {
                keys: &[
                    ("id", Wanted::VALUE),
                    ("body", Wanted::VALUE),
                    ("path", Wanted::VALUE),
                    ("line", Wanted::VALUE),
                    ("side", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        ("pull_request", NUMBERED),
        ("repository", REPOSITORY),
        ("sender", SENDER),
    ],
    items: None,
};
/// What [`parse_check_run`] reads of a `check_run` delivery.
const CHECK_RUN_EVENT: Wanted = Wanted {
    keys: &[
        ("action", Wanted::VALUE),
        (
            "check_run",
            Wanted {
                keys: &[
                    ("id", Wanted::VALUE),
                    ("head_sha", Wanted::VALUE),
                    ("conclusion", Wanted::VALUE),
                    (
                        "check_suite",
                        Wanted {
                            keys: &[("head_branch", Wanted::VALUE)],
                            items: None,
                        },
                    ),
                    ("pull_requests", PULL_REQUESTS),
                ],
                items: None,
            },
        ),
        ("repository", REPOSITORY),
        ("sender", SENDER),
    ],
    items: None,
};
/// What [`parse_check_suite`] reads of a `check_suite` delivery.
const CHECK_SUITE_EVENT: Wanted = Wanted {
    keys: &[
        ("action", Wanted::VALUE),
        (
            "check_suite",
            Wanted {
                keys: &[
                    ("head_branch", Wanted::VALUE),
                    ("head_sha", Wanted::VALUE),
                    ("conclusion", Wanted::VALUE),
                    ("pull_requests", PULL_REQUESTS),
                ],
                items: None,
            },
        ),
        ("repository", REPOSITORY),
        ("sender", SENDER),
    ],
    items: None,
};
/// What [`parse_push`] reads of a `push` delivery.
const PUSH_EVENT: Wanted = Wanted {
    keys: &[
        ("ref", Wanted::VALUE),
        ("deleted", Wanted::VALUE),
        ("after", Wanted::VALUE),
        ("repository", REPOSITORY),
    ],
    items: None,
};
/// What [`repo_ref`] reads.
const REPOSITORY: Wanted = Wanted {
    keys: &[
        ("full_name", Wanted::VALUE),
        ("clone_url", Wanted::VALUE),
        ("default_branch", Wanted::VALUE),
    ],
    items: None,
};
/// What [`sender`] reads.
const SENDER: Wanted = Wanted {
    keys: &[
        ("login", Wanted::VALUE),
        ("type", Wanted::VALUE),
        ("id", Wanted::VALUE),
    ],
    items: None,
};
/// A label: only its name.
const NAMED: Wanted = Wanted {
    keys: &[("name", Wanted::VALUE)],
    items: None,
};
/// A pull request: only its number.
const NUMBERED: Wanted = Wanted {
    keys: &[("number", Wanted::VALUE)],
    items: None,
};
/// The pull requests a check ran for: each one's number.
const PULL_REQUESTS: Wanted = Wanted {
    keys: &[],
    items: Some(&NUMBERED),
};
/// Check-run conclusions that ask for a fix.
const FAILED_RUN_CONCLUSIONS: [&str; 3] = ["failure", "timed_out", "startup_failure"];
/// Check-suite conclusions that ask for a fix.
const FAILED_SUITE_CONCLUSIONS: [&str; 2] = ["failure", "timed_out"];

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

/// [`parse_event_with`] with the default command word: reads one verified delivery, where
/// `event_header` is `X-GitHub-Event` and `trigger_label` the label that starts a job.
pub fn parse_event(
    event_header: &str,
    body: &[u8],
    trigger_label: &str,
) -> Result<BotEvent, WebhookParseError> {
    let triggers = Triggers {
        label: trigger_label,
        command: DEFAULT_COMMAND_WORD,
    };
    parse_event_with(event_header, body, &triggers)
}

/// Reads one verified delivery: `event_header` is `X-GitHub-Event`. `issues`/`labeled` with the
/// trigger label (compared case-insensitively) starts a job; comments with the command word,
/// reviews, review comments and failed checks become [`BotEvent::Remark`]s; a push to the
/// default branch is [`BotEvent::BaseMoved`]. Every body must still be a readable JSON object,
/// so garbage is never silently accepted as "ignored".
pub fn parse_event_with(
    event_header: &str,
    body: &[u8],
    triggers: &Triggers<'_>,
) -> Result<BotEvent, WebhookParseError> {
    let event = event_header.trim();
    if event.is_empty() {
        return Err(WebhookParseError::MissingHeader {
            header: EVENT_HEADER,
        });
    }
    let payload = parse_object(body, wanted(event))?;
    let fields = Fields::new(&payload);
    match event {
        "ping" => Ok(BotEvent::ignored(
            "ping: GitHub checking that the webhook is reachable",
        )),
        "issues" => parse_issues_event(&fields, triggers.label),
        "issue_comment" => parse_issue_comment(&fields, triggers.command),
        "pull_request_review" => parse_review(&fields, triggers.command),
        "pull_request_review_comment" => parse_review_comment(&fields),
        "check_run" => parse_check_run(&fields),
        "check_suite" => parse_check_suite(&fields),
        "push" => parse_push(&fields),
        other => Ok(BotEvent::ignored(format!(
            "`{}` events do not start jobs",
            printable(other)
        ))),
    }
}

/// What is read of each event; of the others the body is only checked to be a JSON object.
fn wanted(event: &str) -> &'static Wanted {
    match event {
        "issues" => &ISSUES_EVENT,
        "issue_comment" => &ISSUE_COMMENT_EVENT,
        "pull_request_review" => &REVIEW_EVENT,
        "pull_request_review_comment" => &REVIEW_COMMENT_EVENT,
        "check_run" => &CHECK_RUN_EVENT,
        "check_suite" => &CHECK_SUITE_EVENT,
        "push" => &PUSH_EVENT,
        _ => &Wanted::VALUE,
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

/// A new comment on an issue or a pull request: only a command counts.
fn parse_issue_comment(fields: &Fields<'_>, word: &str) -> Result<BotEvent, WebhookParseError> {
    if let Some(ignored) = unless_action(fields, "issue_comment", "created")? {
        return Ok(ignored);
    }
    let Some(command) = Command::parse(fields.str("comment.body")?, word) else {
        return Ok(without_command(word));
    };
    let number = fields.u64("issue.number")?;
    // A comment in a pull request's conversation arrives as an issue comment.
    let thread = if fields.optional("issue.pull_request")?.is_some() {
        Thread::ChangeRequest(number)
    } else {
        Thread::Issue(IssueNumber(number))
    };
    let comment = CommentId(fields.u64("comment.id")?);
    remark(fields, thread, Said::Command { command, comment })
}

/// A submitted review: changes requested, or a plain comment that may carry a command.
fn parse_review(fields: &Fields<'_>, word: &str) -> Result<BotEvent, WebhookParseError> {
    if let Some(ignored) = unless_action(fields, "pull_request_review", "submitted")? {
        return Ok(ignored);
    }
    let state = fields.str("review.state")?;
    let Some(said) = review_said(fields, state, word)? else {
        return Ok(BotEvent::ignored(format!(
            "a review with state `{}`; only `changes_requested` and `commented` are read",
            printable(state)
        )));
    };
    let thread = Thread::ChangeRequest(fields.u64("pull_request.number")?);
    remark(fields, thread, said)
}

/// What a review in `state` says; `None` for approvals and dismissals.
fn review_said(
    fields: &Fields<'_>,
    state: &str,
    word: &str,
) -> Result<Option<Said>, WebhookParseError> {
    let body = fields.optional_str("review.body")?.unwrap_or_default();
    // Webhooks send `changes_requested`, the REST API `CHANGES_REQUESTED`.
    if state.eq_ignore_ascii_case("changes_requested") {
        return Ok(Some(Said::Review {
            changes_requested: true,
            body: body.to_owned(),
        }));
    }
    if !state.eq_ignore_ascii_case("commented") {
        return Ok(None);
    }
    let said = match Command::parse(body, word) {
        Some(command) => Said::Command {
            command,
            comment: CommentId(fields.u64("review.id")?),
        },
        None => Said::Review {
            changes_requested: false,
            body: body.to_owned(),
        },
    };
    Ok(Some(said))
}

/// A new comment on a line of a pull request's diff.
fn parse_review_comment(fields: &Fields<'_>) -> Result<BotEvent, WebhookParseError> {
    if let Some(ignored) = unless_action(fields, "pull_request_review_comment", "created")? {
        return Ok(ignored);
    }
    let said = Said::LineComment {
        comment: CommentId(fields.u64("comment.id")?),
        body: fields.str("comment.body")?.to_owned(),
        path: fields.str("comment.path")?.to_owned(),
        line: new_side_line(fields)?,
    };
    let thread = Thread::ChangeRequest(fields.u64("pull_request.number")?);
    remark(fields, thread, said)
}

/// The commented line in the new version of the file. `line` is null on an outdated comment,
/// and on the `LEFT` side (a removed line) it counts lines of the old version.
fn new_side_line(fields: &Fields<'_>) -> Result<Option<u64>, WebhookParseError> {
    if fields.optional_str("comment.side")? == Some("LEFT") {
        return Ok(None);
    }
    fields.optional_u64("comment.line")
}

/// One check run completed: a failure on a pull request's commit.
fn parse_check_run(fields: &Fields<'_>) -> Result<BotEvent, WebhookParseError> {
    if let Some(ignored) = unless_action(fields, "check_run", "completed")? {
        return Ok(ignored);
    }
    let conclusion = fields.str("check_run.conclusion")?;
    if !FAILED_RUN_CONCLUSIONS.contains(&conclusion) {
        return Ok(not_failed("check run", conclusion));
    }
    let Some(number) = fields.first_u64("check_run.pull_requests", "number")? else {
        return Ok(without_pull_request());
    };
    let said = Said::ChecksFailed {
        head_branch: fields.str("check_run.check_suite.head_branch")?.to_owned(),
        head_sha: fields.str("check_run.head_sha")?.to_owned(),
        runs: vec![fields.u64("check_run.id")?],
    };
    remark(fields, Thread::ChangeRequest(number), said)
}

/// A whole check suite completed: a failure on a pull request's commit.
fn parse_check_suite(fields: &Fields<'_>) -> Result<BotEvent, WebhookParseError> {
    if let Some(ignored) = unless_action(fields, "check_suite", "completed")? {
        return Ok(ignored);
    }
    let conclusion = fields.str("check_suite.conclusion")?;
    if !FAILED_SUITE_CONCLUSIONS.contains(&conclusion) {
        return Ok(not_failed("check suite", conclusion));
    }
    let Some(number) = fields.first_u64("check_suite.pull_requests", "number")? else {
        return Ok(without_pull_request());
    };
    let said = Said::ChecksFailed {
        head_branch: fields.str("check_suite.head_branch")?.to_owned(),
        head_sha: fields.str("check_suite.head_sha")?.to_owned(),
        runs: Vec::new(),
    };
    remark(fields, Thread::ChangeRequest(number), said)
}

/// A push: the default branch moving, unless the push deletes it. Pushes to other branches
/// and to tags are ignored, and so is a repository whose default branch the payload omits.
fn parse_push(fields: &Fields<'_>) -> Result<BotEvent, WebhookParseError> {
    let pushed = fields.str("ref")?;
    let Some(default_branch) = fields.optional_str("repository.default_branch")? else {
        return Ok(BotEvent::ignored(format!(
            "a push to `{}` in a repository whose default branch is not given",
            printable(short_ref(pushed))
        )));
    };
    if pushed.strip_prefix("refs/heads/") != Some(default_branch) {
        return Ok(BotEvent::ignored(format!(
            "a push to `{}` is not to the default branch `{}`",
            printable(short_ref(pushed)),
            printable(default_branch)
        )));
    }
    if fields.optional_bool("deleted")? == Some(true) {
        return Ok(BotEvent::ignored(format!(
            "a push deleting the default branch `{}`",
            printable(default_branch)
        )));
    }
    Ok(BotEvent::BaseMoved {
        repo: repo_ref(fields)?,
        branch: default_branch.to_owned(),
        after: fields.str("after")?.to_owned(),
    })
}

/// A branch by its name (`main` for `refs/heads/main`); any other ref whole, so a tag reads as
/// `refs/tags/v1`.
fn short_ref(pushed: &str) -> &str {
    pushed.strip_prefix("refs/heads/").unwrap_or(pushed)
}

/// `Some(ignored)` when the delivery's `action` is not the one read of this event.
fn unless_action(
    fields: &Fields<'_>,
    event: &str,
    read: &str,
) -> Result<Option<BotEvent>, WebhookParseError> {
    let action = fields.str("action")?;
    Ok((action != read).then(|| {
        BotEvent::ignored(format!(
            "{event} event with action `{}`; only `{read}` is read",
            printable(action)
        ))
    }))
}

fn without_command(word: &str) -> BotEvent {
    BotEvent::ignored(format!("a comment without the command `/{word}`"))
}

fn not_failed(what: &str, conclusion: &str) -> BotEvent {
    BotEvent::ignored(format!(
        "a {what} that concluded `{}`, not a failure",
        printable(conclusion)
    ))
}

fn without_pull_request() -> BotEvent {
    BotEvent::ignored("checks of a commit with no pull request")
}

/// What was said, by the delivery's sender, in the delivery's repository.
fn remark(fields: &Fields<'_>, thread: Thread, said: Said) -> Result<BotEvent, WebhookParseError> {
    Ok(BotEvent::Remark(Remark {
        repo: repo_ref(fields)?,
        thread,
        actor: sender(fields)?,
        said,
    }))
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
