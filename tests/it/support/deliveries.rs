//! Webhook deliveries for bot stories, built from the recorded payloads in `tests/data/webhooks/`
//! with only the fields a story needs rewritten, and signed the way each forge signs them.

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// Who adds a label in a story.
#[derive(Debug, Clone)]
pub struct Actor {
    pub login: String,
    pub id: u64,
    pub bot: bool,
}

pub fn person(login: &str, id: u64) -> Actor {
    Actor {
        login: login.to_owned(),
        id,
        bot: false,
    }
}

pub fn bot_account(login: &str, id: u64) -> Actor {
    Actor {
        login: login.to_owned(),
        id,
        bot: true,
    }
}

/// The issue a story labels.
#[derive(Debug, Clone)]
pub struct LabeledIssue<'a> {
    pub owner_path: &'a str,
    pub clone_url: &'a str,
    pub default_branch: &'a str,
    pub number: u64,
    pub title: &'a str,
    pub body: &'a str,
    pub label: &'a str,
}

fn recorded(path: &str) -> Value {
    let full = format!("{}/tests/data/webhooks/{path}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&full).unwrap_or_else(|err| panic!("{full}: {err}"));
    serde_json::from_str(&text).unwrap_or_else(|err| panic!("{full}: {err}"))
}

/// GitHub's recorded `issues`/`labeled` delivery, pointed at `issue` and labelled by `actor`.
pub fn github_labeled(issue: &LabeledIssue<'_>, actor: &Actor) -> Vec<u8> {
    let mut payload = recorded("github/issues/labeled.payload.json");
    let (owner, name) = issue.owner_path.split_once('/').expect("owner/name");
    payload["label"]["name"] = json!(issue.label);
    payload["issue"]["number"] = json!(issue.number);
    payload["issue"]["title"] = json!(issue.title);
    payload["issue"]["body"] = json!(issue.body);
    payload["issue"]["state"] = json!("open");
    payload["issue"]["locked"] = json!(false);
    payload["issue"]["labels"] = json!([{ "name": issue.label }]);
    payload["repository"]["full_name"] = json!(issue.owner_path);
    payload["repository"]["name"] = json!(name);
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["clone_url"] = json!(issue.clone_url);
    payload["repository"]["default_branch"] = json!(issue.default_branch);
    payload["sender"]["login"] = json!(actor.login);
    payload["sender"]["id"] = json!(actor.id);
    payload["sender"]["type"] = json!(if actor.bot { "Bot" } else { "User" });
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// GitLab's recorded `Issue Hook` whose label change adds `issue.label`, by `actor`.
pub fn gitlab_labeled(issue: &LabeledIssue<'_>, actor: &Actor) -> Vec<u8> {
    let mut payload = recorded("gitlab/issue_hook.json");
    let label = json!({"id": 901, "title": issue.label, "color": "#428BCA", "project_id": 1,
        "created_at": "2013-12-03T17:15:43Z", "updated_at": "2013-12-03T17:15:43Z",
        "template": false, "description": null, "type": "ProjectLabel", "group_id": null});
    payload["changes"]["labels"] = json!({"previous": [], "current": [label.clone()]});
    payload["labels"] = json!([label.clone()]);
    payload["object_attributes"]["labels"] = json!([label]);
    payload["object_attributes"]["iid"] = json!(issue.number);
    payload["object_attributes"]["title"] = json!(issue.title);
    payload["object_attributes"]["description"] = json!(issue.body);
    payload["object_attributes"]["state"] = json!("opened");
    payload["object_attributes"]["discussion_locked"] = Value::Null;
    payload["project"]["path_with_namespace"] = json!(issue.owner_path);
    payload["project"]["git_http_url"] = json!(issue.clone_url);
    payload["project"]["default_branch"] = json!(issue.default_branch);
    payload["user"]["username"] = json!(actor.login);
    payload["user"]["id"] = json!(actor.id);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// `sha256=<hex>`: GitHub's `X-Hub-Signature-256` of `body` under `secret`.
pub fn github_signature(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Where a story says something: on an issue, or on a pull/merge request (by its number/iid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum On {
    Issue(u64),
    ChangeRequest(u64),
}

/// The repository a remark is made in.
#[derive(Debug, Clone)]
pub struct Place<'a> {
    pub owner_path: &'a str,
    pub clone_url: &'a str,
    pub default_branch: &'a str,
}

fn github_repository(payload: &mut Value, place: &Place<'_>, actor: &Actor) {
    let (owner, name) = place.owner_path.split_once('/').expect("owner/name");
    payload["repository"]["full_name"] = json!(place.owner_path);
    payload["repository"]["name"] = json!(name);
    payload["repository"]["owner"]["login"] = json!(owner);
    payload["repository"]["clone_url"] = json!(place.clone_url);
    payload["repository"]["default_branch"] = json!(place.default_branch);
    payload["sender"]["login"] = json!(actor.login);
    payload["sender"]["id"] = json!(actor.id);
    payload["sender"]["type"] = json!(if actor.bot { "Bot" } else { "User" });
}

/// GitHub's recorded `issue_comment`/`created`, saying `body` on an issue or a pull request.
pub fn github_comment(
    place: &Place<'_>,
    on: On,
    comment_id: u64,
    body: &str,
    actor: &Actor,
) -> Vec<u8> {
    let mut payload = recorded("github/issue_comment/created.payload.json");
    github_repository(&mut payload, place, actor);
    let (number, pull) = match on {
        On::Issue(number) => (number, false),
        On::ChangeRequest(number) => (number, true),
    };
    payload["issue"]["number"] = json!(number);
    payload["issue"]["pull_request"] = if pull {
        json!({"url": format!("https://api.github.com/repos/{}/pulls/{number}", place.owner_path)})
    } else {
        Value::Null
    };
    payload["comment"]["id"] = json!(comment_id);
    payload["comment"]["body"] = json!(body);
    payload["comment"]["user"]["login"] = json!(actor.login);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// GitHub's recorded `pull_request_review`/`submitted` with `state` and `body` on pull `number`.
pub fn github_review(
    place: &Place<'_>,
    number: u64,
    review_id: u64,
    state: &str,
    body: &str,
    actor: &Actor,
) -> Vec<u8> {
    let mut payload = recorded("github/pull_request_review/submitted.payload.json");
    github_repository(&mut payload, place, actor);
    payload["pull_request"]["number"] = json!(number);
    payload["review"]["id"] = json!(review_id);
    payload["review"]["state"] = json!(state);
    payload["review"]["body"] = json!(body);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// GitHub's recorded `pull_request_review_comment`/`created`: `body` on `file` line `line`.
pub fn github_line_comment(
    place: &Place<'_>,
    number: u64,
    comment_id: u64,
    (file, line): (&str, u64),
    body: &str,
    actor: &Actor,
) -> Vec<u8> {
    let mut payload = recorded("github/pull_request_review_comment/created.payload.json");
    github_repository(&mut payload, place, actor);
    payload["pull_request"]["number"] = json!(number);
    payload["comment"]["id"] = json!(comment_id);
    payload["comment"]["path"] = json!(file);
    payload["comment"]["line"] = json!(line);
    payload["comment"]["body"] = json!(body);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

fn gitlab_project(payload: &mut Value, place: &Place<'_>, actor: &Actor) {
    payload["project"]["path_with_namespace"] = json!(place.owner_path);
    payload["project"]["git_http_url"] = json!(place.clone_url);
    payload["project"]["default_branch"] = json!(place.default_branch);
    payload["user"]["username"] = json!(actor.login);
    payload["user"]["id"] = json!(actor.id);
}

/// GitLab's recorded `Note Hook` on an issue or a merge request, saying `body`.
pub fn gitlab_note(place: &Place<'_>, on: On, note_id: u64, body: &str, actor: &Actor) -> Vec<u8> {
    let mut payload = match on {
        On::Issue(iid) => {
            let mut payload = recorded("gitlab/note_hook_issue.json");
            payload["issue"]["iid"] = json!(iid);
            payload
        }
        On::ChangeRequest(iid) => {
            let mut payload = recorded("gitlab/note_hook_merge_request.json");
            payload["merge_request"]["iid"] = json!(iid);
            payload
        }
    };
    gitlab_project(&mut payload, place, actor);
    payload["object_attributes"]["id"] = json!(note_id);
    payload["object_attributes"]["note"] = json!(body);
    payload["object_attributes"]["system"] = json!(false);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// A diff note (`Note Hook`, `type: DiffNote`) on line `line` of `file` in merge request `iid`.
pub fn gitlab_diff_note(
    place: &Place<'_>,
    iid: u64,
    note_id: u64,
    (file, line): (&str, u64),
    body: &str,
    actor: &Actor,
) -> Vec<u8> {
    // GitLab's docs show no diff note: the recorded merge request note gets the `type` and
    // `position` note hooks carry (see tests/data/webhooks/SOURCES.md), this position being
    // the shape of the discussions API docs' example.
    let mut payload = recorded("gitlab/note_hook_merge_request.json");
    gitlab_project(&mut payload, place, actor);
    payload["merge_request"]["iid"] = json!(iid);
    payload["object_attributes"]["id"] = json!(note_id);
    payload["object_attributes"]["note"] = json!(body);
    payload["object_attributes"]["system"] = json!(false);
    payload["object_attributes"]["type"] = json!("DiffNote");
    payload["object_attributes"]["position"] = json!({
        "base_sha": "b5d6e7b1613fca24d250fa8e5bc7bcc3dd6002ef",
        "start_sha": "7c9c2ead8a320fb7ba0b4e234bd9529a2614e306",
        "head_sha": "4803c71e6b1833ca72b8b26ef2ecd5adc8a38031",
        "old_path": file,
        "new_path": file,
        "position_type": "text",
        "old_line": line,
        "new_line": line,
    });
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// The checks of a change request's head that failed, as a story tells the forge's webhook.
#[derive(Debug, Clone)]
pub struct ChecksFailed<'a> {
    /// The pull request number or merge request iid.
    pub number: u64,
    pub head_sha: &'a str,
    pub head_branch: &'a str,
    /// GitHub: the failed check run's id; GitLab: the failed pipeline's id.
    pub run: u64,
}

/// GitHub's recorded `check_run`/`completed` with a `failure` conclusion, on pull `number`.
pub fn github_check_run_failed(
    place: &Place<'_>,
    checks: &ChecksFailed<'_>,
    sender: &Actor,
) -> Vec<u8> {
    let mut payload = recorded("github/check_run/completed.1.payload.json");
    github_repository(&mut payload, place, sender);
    let run = &mut payload["check_run"];
    run["id"] = json!(checks.run);
    run["head_sha"] = json!(checks.head_sha);
    run["conclusion"] = json!("failure");
    run["check_suite"]["head_branch"] = json!(checks.head_branch);
    run["check_suite"]["head_sha"] = json!(checks.head_sha);
    run["pull_requests"][0]["number"] = json!(checks.number);
    run["pull_requests"][0]["head"]["ref"] = json!(checks.head_branch);
    run["pull_requests"][0]["head"]["sha"] = json!(checks.head_sha);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// GitLab's recorded `Pipeline Hook`, failed, for merge request `number`.
pub fn gitlab_pipeline_failed(
    place: &Place<'_>,
    checks: &ChecksFailed<'_>,
    user: &Actor,
) -> Vec<u8> {
    let mut payload = recorded("gitlab/pipeline_hook.json");
    gitlab_project(&mut payload, place, user);
    let attributes = &mut payload["object_attributes"];
    attributes["id"] = json!(checks.run);
    attributes["status"] = json!("failed");
    attributes["ref"] = json!(checks.head_branch);
    attributes["sha"] = json!(checks.head_sha);
    payload["merge_request"]["iid"] = json!(checks.number);
    payload["merge_request"]["source_branch"] = json!(checks.head_branch);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// GitHub's recorded `push` to the default branch of `place`, now at `after`.
pub fn github_push(place: &Place<'_>, after: &str, pusher: &Actor) -> Vec<u8> {
    let mut payload = recorded("github/push/payload.json");
    github_repository(&mut payload, place, pusher);
    payload["ref"] = json!(format!("refs/heads/{}", place.default_branch));
    payload["after"] = json!(after);
    payload["deleted"] = json!(false);
    serde_json::to_vec(&payload).expect("the payload serialises")
}

/// GitLab's recorded `Push Hook` to the default branch of `place`, now at `after`.
pub fn gitlab_push(place: &Place<'_>, after: &str, pusher: &Actor) -> Vec<u8> {
    let mut payload = recorded("gitlab/push_hook.json");
    payload["project"]["path_with_namespace"] = json!(place.owner_path);
    payload["project"]["git_http_url"] = json!(place.clone_url);
    payload["project"]["default_branch"] = json!(place.default_branch);
    payload["ref"] = json!(format!("refs/heads/{}", place.default_branch));
    payload["after"] = json!(after);
    payload["checkout_sha"] = json!(after);
    payload["user_username"] = json!(pusher.login);
    payload["user_id"] = json!(pusher.id);
    serde_json::to_vec(&payload).expect("the payload serialises")
}
