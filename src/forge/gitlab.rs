//! GitLab's webhook edge: the `X-Gitlab-Token` shared secret, the delivery id, and turning
//! issue hooks that add the trigger label, comments, failed pipelines and pushes to the default
//! branch into [`BotEvent`]s.

use reqwest::header::HeaderMap;
use secrecy::SecretString;

use super::webhook::{
    Fields, Wanted, delivery_id_header, parse_object, printable, same_label, token_matches,
    usable_secrets,
};
use super::{
    BotEvent, Command, CommentId, DEFAULT_COMMAND_WORD, DeliveryId, ForgeKind, ForgeUser,
    IssueNumber, Remark, RepoRef, Said, Thread, Triggers, WebhookAuthError, WebhookParseError,
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
        ("project", PROJECT),
        ("user", USER),
    ],
    items: None,
};
/// What [`parse_note_hook`] reads of a note (comment) hook.
const NOTE_HOOK: Wanted = Wanted {
    keys: &[
        (
            "object_attributes",
            Wanted {
                keys: &[
                    ("id", Wanted::VALUE),
                    ("note", Wanted::VALUE),
                    ("noteable_type", Wanted::VALUE),
                    ("action", Wanted::VALUE),
                    ("system", Wanted::VALUE),
                    ("type", Wanted::VALUE),
                    (
                        "position",
                        Wanted {
                            keys: &[
                                ("new_path", Wanted::VALUE),
                                ("old_path", Wanted::VALUE),
                                ("new_line", Wanted::VALUE),
                            ],
                            items: None,
                        },
                    ),
                ],
                items: None,
            },
        ),
        ("issue", WITH_IID),
        ("merge_request", WITH_IID),
        ("project", PROJECT),
        ("user", USER),
    ],
    items: None,
};
/// What [`parse_pipeline_hook`] reads of a pipeline hook.
const PIPELINE_HOOK: Wanted = Wanted {
    keys: &[
        (
            "object_attributes",
            Wanted {
                keys: &[
                    ("id", Wanted::VALUE),
                    ("ref", Wanted::VALUE),
                    ("sha", Wanted::VALUE),
                    ("status", Wanted::VALUE),
                ],
                items: None,
            },
        ),
        ("merge_request", WITH_IID),
        ("project", PROJECT),
        ("user", USER),
    ],
    items: None,
};
/// What [`parse_push_hook`] reads of a push hook. It has no `user` object (only `user_*`
/// fields), and nothing of the pusher is read.
const PUSH_HOOK: Wanted = Wanted {
    keys: &[
        ("ref", Wanted::VALUE),
        ("after", Wanted::VALUE),
        ("project", PROJECT),
    ],
    items: None,
};
/// What [`repo_ref`] reads.
const PROJECT: Wanted = Wanted {
    keys: &[
        ("path_with_namespace", Wanted::VALUE),
        ("git_http_url", Wanted::VALUE),
        ("default_branch", Wanted::VALUE),
    ],
    items: None,
};
/// What [`user`] reads.
const USER: Wanted = Wanted {
    keys: &[("username", Wanted::VALUE), ("id", Wanted::VALUE)],
    items: None,
};
/// An issue or a merge request: only its project-scoped `iid`.
const WITH_IID: Wanted = Wanted {
    keys: &[("iid", Wanted::VALUE)],
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

/// [`parse_event_with`] with the default command word: reads one verified delivery, where
/// `event_header` is `X-Gitlab-Event` and `trigger_label` the label that starts a job.
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

/// Reads one verified delivery: `event_header` is `X-Gitlab-Event`. An issue hook starts a job
/// only when its `changes.labels` shows the trigger label newly added (case-insensitively);
/// notes with the command word, diff notes on merge requests and failed merge-request
/// pipelines become [`BotEvent::Remark`]s; a push to the default branch is
/// [`BotEvent::BaseMoved`]. Every body must still be a JSON object.
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
        "Issue Hook" | "Confidential Issue Hook" => parse_issue_hook(&fields, triggers.label),
        "Note Hook" | "Confidential Note Hook" => parse_note_hook(&fields, triggers.command),
        "Pipeline Hook" => parse_pipeline_hook(&fields),
        "Push Hook" => parse_push_hook(&fields),
        "Tag Push Hook" => Ok(BotEvent::ignored(
            "a tag push: only a branch push moves the default branch",
        )),
        other => Ok(BotEvent::ignored(format!(
            "`{}` events do not start jobs",
            printable(other)
        ))),
    }
}

/// What is read of each event; of the others the body is only checked to be a JSON object.
fn wanted(event: &str) -> &'static Wanted {
    match event {
        "Issue Hook" | "Confidential Issue Hook" => &ISSUE_HOOK,
        "Note Hook" | "Confidential Note Hook" => &NOTE_HOOK,
        "Pipeline Hook" => &PIPELINE_HOOK,
        "Push Hook" => &PUSH_HOOK,
        _ => &Wanted::VALUE,
    }
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

/// A new comment: a command on an issue or a merge request, or any comment on a line of a
/// merge request's diff.
fn parse_note_hook(fields: &Fields<'_>, word: &str) -> Result<BotEvent, WebhookParseError> {
    if let Some(ignored) = unread_note(fields)? {
        return Ok(ignored);
    }
    let on_merge_request = match fields.str("object_attributes.noteable_type")? {
        "Issue" => false,
        "MergeRequest" => true,
        other => {
            return Ok(BotEvent::ignored(format!(
                "a note on a `{}`; only issue and merge request notes are read",
                printable(other)
            )));
        }
    };
    let Some(said) = note_said(fields, word, on_merge_request)? else {
        return Ok(BotEvent::ignored(format!(
            "a comment without the command `/{word}`"
        )));
    };
    let thread = if on_merge_request {
        Thread::ChangeRequest(fields.u64("merge_request.iid")?)
    } else {
        Thread::Issue(IssueNumber(fields.u64("issue.iid")?))
    };
    remark(fields, thread, said)
}

/// `Some(ignored)` for an edited note or one GitLab wrote itself.
fn unread_note(fields: &Fields<'_>) -> Result<Option<BotEvent>, WebhookParseError> {
    // Edits (GitLab 16.11+) send `update`; older GitLab sends no action at all.
    if let Some(action) = fields.optional_str("object_attributes.action")?
        && action != "create"
    {
        return Ok(Some(BotEvent::ignored(format!(
            "note event with action `{}`; only `create` is read",
            printable(action)
        ))));
    }
    if fields.optional_bool("object_attributes.system")? == Some(true) {
        return Ok(Some(BotEvent::ignored("a system note")));
    }
    Ok(None)
}

/// The command in the note, else (on a merge request) the line comment; `None` for the rest.
fn note_said(
    fields: &Fields<'_>,
    word: &str,
    on_merge_request: bool,
) -> Result<Option<Said>, WebhookParseError> {
    let note = fields.str("object_attributes.note")?;
    let comment = CommentId(fields.u64("object_attributes.id")?);
    if let Some(command) = Command::parse(note, word) {
        return Ok(Some(Said::Command { command, comment }));
    }
    // A line comment on the bot's merge request asks for a revision without the word.
    if on_merge_request && is_diff_note(fields)? {
        return line_comment(fields, note, comment).map(Some);
    }
    Ok(None)
}

/// Whether the note sits on a line of the diff (a `DiffNote` with a position).
fn is_diff_note(fields: &Fields<'_>) -> Result<bool, WebhookParseError> {
    Ok(
        fields.optional_str("object_attributes.type")? == Some("DiffNote")
            && fields.optional("object_attributes.position")?.is_some(),
    )
}

fn line_comment(
    fields: &Fields<'_>,
    note: &str,
    comment: CommentId,
) -> Result<Said, WebhookParseError> {
    // GitLab sets both paths; the new one names the file as the merge request leaves it.
    let path = match fields.optional_str("object_attributes.position.new_path")? {
        Some(path) => path,
        None => fields.str("object_attributes.position.old_path")?,
    };
    Ok(Said::LineComment {
        comment,
        body: note.to_owned(),
        path: path.to_owned(),
        line: fields.optional_u64("object_attributes.position.new_line")?,
    })
}

/// A pipeline status change: a failure of a merge request's pipeline.
fn parse_pipeline_hook(fields: &Fields<'_>) -> Result<BotEvent, WebhookParseError> {
    let status = fields.str("object_attributes.status")?;
    if status != "failed" {
        return Ok(BotEvent::ignored(format!(
            "a pipeline with status `{}`, not a failure",
            printable(status)
        )));
    }
    // Only a merge request pipeline carries its merge request.
    if fields.optional("merge_request")?.is_none() {
        return Ok(BotEvent::ignored("a failed pipeline with no merge request"));
    }
    let said = Said::ChecksFailed {
        head_branch: fields.str("object_attributes.ref")?.to_owned(),
        head_sha: fields.str("object_attributes.sha")?.to_owned(),
        runs: vec![fields.u64("object_attributes.id")?],
    };
    let thread = Thread::ChangeRequest(fields.u64("merge_request.iid")?);
    remark(fields, thread, said)
}

/// A branch push: the default branch moving, unless the push deletes it. Pushes to other
/// branches are ignored, and so is a project whose default branch the payload omits.
fn parse_push_hook(fields: &Fields<'_>) -> Result<BotEvent, WebhookParseError> {
    let pushed = fields.str("ref")?;
    let Some(default_branch) = fields.optional_str("project.default_branch")? else {
        return Ok(BotEvent::ignored(format!(
            "a push to `{}` in a project whose default branch is not given",
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
    // `checkout_sha` is null when the push deletes the branch; `after` is always there.
    let after = fields.str("after")?;
    if is_blank_sha(after) {
        return Ok(BotEvent::ignored(format!(
            "a push deleting the default branch `{}`",
            printable(default_branch)
        )));
    }
    Ok(BotEvent::BaseMoved {
        repo: repo_ref(fields)?,
        branch: default_branch.to_owned(),
        after: after.to_owned(),
    })
}

/// A branch by its name (`main` for `refs/heads/main`); any other ref whole, so a tag reads as
/// `refs/tags/v1`.
fn short_ref(pushed: &str) -> &str {
    pushed.strip_prefix("refs/heads/").unwrap_or(pushed)
}

/// GitLab's "no commit" sha (`0000…`), the `after` of a push that deletes the branch.
fn is_blank_sha(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|byte| byte == b'0')
}

/// What was said, by the delivery's user, in the delivery's project.
fn remark(fields: &Fields<'_>, thread: Thread, said: Said) -> Result<BotEvent, WebhookParseError> {
    Ok(BotEvent::Remark(Remark {
        repo: repo_ref(fields)?,
        thread,
        actor: user(fields)?,
        said,
    }))
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
