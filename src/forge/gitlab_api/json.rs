//! GitLab REST v4 JSON read into the neutral forge types (users, issues, notes, merge requests,
//! memberships, failed jobs); every missing or mistyped field is named in the error.

use serde_json::Value;

use crate::forge::{
    ChangeRequest, Comment, CommentId, FailedCheck, ForgeUser, IssueInfo, IssueNumber, Permission,
};

/// What GitLab puts before a merge request's title to make it a draft.
pub const DRAFT_PREFIX: &str = "Draft: ";

type Read<T> = Result<T, JsonError>;

/// Why an answer does not have the shape GitLab documents, naming the field.
#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error("`{0}` is missing")]
    Missing(String),
    #[error("`{field}` is {found}, not {wanted}")]
    Mistyped {
        field: String,
        found: &'static str,
        wanted: &'static str,
    },
    #[error("`{field}` is {number}, not a whole number ≥ 0")]
    NotWhole {
        field: String,
        number: serde_json::Number,
    },
    #[error("`labels[{0}]` is neither a name nor a label object")]
    Label(usize),
    #[error("expected a JSON list, got {0}")]
    NotAList(&'static str),
    #[error("the project has no `default_branch` (is the repository empty?)")]
    NoDefaultBranch,
    #[error("author: {0}")]
    Author(Box<JsonError>),
}

fn author(value: &Value) -> Read<ForgeUser> {
    user(object(value, "author")?).map_err(|error| JsonError::Author(Box::new(error)))
}

pub fn user(value: &Value) -> Read<ForgeUser> {
    let login = string(value, "username")?;
    let is_bot = match value.get("bot") {
        Some(Value::Bool(bot)) => *bot,
        _ => looks_like_bot(&login),
    };
    Ok(ForgeUser {
        id: number(value, "id")?,
        login,
        is_bot,
    })
}

/// Where GitLab does not say (`bot` appears only on `/user` and `/users`), the names it gives
/// bot accounts: `project_7_bot_…`/`group_3_bot_…` for access tokens, and the usual suffixes.
pub fn looks_like_bot(username: &str) -> bool {
    let name = username.to_ascii_lowercase();
    let token_bot = ["project_", "group_"].iter().any(|kind| {
        name.strip_prefix(kind)
            .and_then(|rest| rest.split_once("_bot"))
            .is_some_and(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    });
    token_bot || name.ends_with("[bot]") || name.ends_with("-bot") || name.ends_with("_bot")
}

pub fn issue(value: &Value) -> Read<IssueInfo> {
    let state = string(value, "state")?;
    Ok(IssueInfo {
        number: IssueNumber(number(value, "iid")?),
        title: string(value, "title")?,
        body: optional_string(value, "description")?.unwrap_or_default(),
        labels: labels(value)?,
        open: state == "opened",
        locked: optional_bool(value, "discussion_locked")?.unwrap_or(false),
        author: author(value)?,
    })
}

/// A note on an issue; `None` for the system notes GitLab writes itself ("added ~bug label").
pub fn note(value: &Value) -> Read<Option<Comment>> {
    if optional_bool(value, "system")?.unwrap_or(false) {
        return Ok(None);
    }
    Ok(Some(Comment {
        id: CommentId(number(value, "id")?),
        body: optional_string(value, "body")?.unwrap_or_default(),
        author: author(value)?,
    }))
}

pub fn note_id(value: &Value) -> Read<CommentId> {
    number(value, "id").map(CommentId)
}

/// A merge request; the neutral title leaves out the `Draft: ` prefix that `draft` already says.
pub fn merge_request(value: &Value) -> Read<ChangeRequest> {
    let title = string(value, "title")?;
    let draft = match optional_bool(value, "draft")? {
        Some(draft) => draft,
        None => optional_bool(value, "work_in_progress")?.unwrap_or(false),
    };
    let title = match title.strip_prefix(DRAFT_PREFIX) {
        Some(rest) if draft => rest.to_owned(),
        _ => title,
    };
    Ok(ChangeRequest {
        number: number(value, "iid")?,
        url: string(value, "web_url")?,
        title,
        body: optional_string(value, "description")?.unwrap_or_default(),
        head: string(value, "source_branch")?,
        base: string(value, "target_branch")?,
        draft,
        author: author(value)?,
    })
}

/// A member of the project (directly or through a group); blocked or pending members may do nothing.
pub fn membership(value: &Value) -> Read<Permission> {
    let level = number(value, "access_level")?;
    let active = optional_string(value, "state")?.is_none_or(|state| state == "active");
    Ok(if active {
        Permission::from_gitlab_access_level(level)
    } else {
        Permission::None
    })
}

pub fn default_branch(value: &Value) -> Read<String> {
    optional_string(value, "default_branch")?
        .filter(|branch| !branch.is_empty())
        .ok_or(JsonError::NoDefaultBranch)
}

/// Any object's numeric `id` (a pipeline's).
pub fn id(value: &Value) -> Read<u64> {
    number(value, "id")
}

/// A failed job of a pipeline, as a failed check named `stage: name`.
pub fn failed_job(value: &Value) -> Read<FailedCheck> {
    let name = string(value, "name")?;
    let stage = optional_string(value, "stage")?;
    Ok(FailedCheck {
        id: number(value, "id")?,
        name: match stage {
            Some(stage) if !stage.is_empty() => format!("{stage}: {name}"),
            _ => name,
        },
        summary: optional_string(value, "failure_reason")?.unwrap_or_default(),
    })
}

pub fn list(value: &Value) -> Read<&[Value]> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| JsonError::NotAList(kind(value)))
}

/// REST answers give label names; with `with_labels_details` they are objects with a `name`.
fn labels(value: &Value) -> Read<Vec<String>> {
    let Some(items) = value.get("labels").filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let items = items
        .as_array()
        .ok_or_else(|| mistyped("labels", items, "a list"))?;
    items
        .iter()
        .enumerate()
        .map(|(at, label)| match label {
            Value::String(name) => Ok(name.clone()),
            _ => label["name"]
                .as_str()
                .map(str::to_owned)
                .ok_or(JsonError::Label(at)),
        })
        .collect()
}

fn object<'v>(value: &'v Value, field: &str) -> Read<&'v Value> {
    match value.get(field) {
        Some(inner @ Value::Object(_)) => Ok(inner),
        Some(other) => Err(mistyped(field, other, "an object")),
        None => Err(JsonError::Missing(field.to_owned())),
    }
}

fn number(value: &Value, field: &str) -> Read<u64> {
    match value.get(field) {
        Some(Value::Number(n)) => n.as_u64().ok_or_else(|| JsonError::NotWhole {
            field: field.to_owned(),
            number: n.clone(),
        }),
        Some(other) => Err(mistyped(field, other, "a number")),
        None => Err(JsonError::Missing(field.to_owned())),
    }
}

fn string(value: &Value, field: &str) -> Read<String> {
    optional_string(value, field)?.ok_or_else(|| JsonError::Missing(field.to_owned()))
}

fn optional_string(value: &Value, field: &str) -> Read<Option<String>> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(other) => Err(mistyped(field, other, "a string")),
    }
}

fn optional_bool(value: &Value, field: &str) -> Read<Option<bool>> {
    match value.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(flag)) => Ok(Some(*flag)),
        Some(other) => Err(mistyped(field, other, "true or false")),
    }
}

fn mistyped(field: &str, found: &Value, wanted: &'static str) -> JsonError {
    JsonError::Mistyped {
        field: field.to_owned(),
        found: kind(found),
        wanted,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn access_token_bots_and_bot_suffixes_look_like_bots() {
        for name in [
            "project_7_bot_3f2a",
            "group_12_bot",
            "renovate-bot",
            "dependabot[bot]",
            "ci_bot",
        ] {
            assert!(looks_like_bot(name), "{name}");
        }
        for name in ["abbot", "botanist", "robotics", "alice"] {
            assert!(!looks_like_bot(name), "{name}");
        }
    }

    #[test]
    fn the_bot_field_wins_over_the_name() {
        let human = user(&json!({"id": 1, "username": "ci_bot", "bot": false})).unwrap();
        assert!(!human.is_bot);
        let bot = user(&json!({"id": 2, "username": "alice", "bot": true})).unwrap();
        assert!(bot.is_bot);
    }

    #[test]
    fn an_issue_without_iid_names_the_field() {
        let err =
            issue(&json!({"title": "t", "state": "opened", "author": {"id": 1, "username": "a"}}))
                .unwrap_err();
        assert_eq!(err.to_string(), "`iid` is missing");
    }

    #[test]
    fn an_issue_with_a_numeric_label_names_its_position() {
        let err = issue(&json!({
            "iid": 1, "title": "t", "state": "opened", "labels": ["bug", 7],
            "author": {"id": 1, "username": "a"}
        }))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "`labels[1]` is neither a name nor a label object"
        );
    }

    #[test]
    fn a_blocked_member_has_no_permission() {
        let blocked = json!({"access_level": 40, "state": "blocked"});
        assert_eq!(membership(&blocked).unwrap(), Permission::None);
        let active = json!({"access_level": 40, "state": "active"});
        assert_eq!(membership(&active).unwrap(), Permission::Maintain);
    }

    #[test]
    fn a_draft_title_loses_its_prefix_and_keeps_the_flag() {
        let mr = merge_request(&json!({
            "iid": 3, "web_url": "u", "title": "Draft: fix it", "description": null,
            "source_branch": "b", "target_branch": "main", "draft": true,
            "author": {"id": 7, "username": "autofix-bot"}
        }))
        .unwrap();
        assert_eq!(
            (mr.title.as_str(), mr.draft, mr.body.as_str()),
            ("fix it", true, "")
        );
    }

    #[test]
    fn an_empty_project_has_no_default_branch() {
        let err = default_branch(&json!({"default_branch": null}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("default_branch"), "{err}");
    }
}
