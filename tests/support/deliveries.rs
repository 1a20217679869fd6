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
