#!/usr/bin/env python3
"""Seed corpora for the fuzz targets, from the recorded fixtures in tests/data and from the
repository's own history: writes fuzz/seeds/<target>/<name>. Run by scripts/fuzz."""

import hashlib
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SEEDS = ROOT / "fuzz" / "seeds"

# The webhook target's first byte picks the event: the order of EVENTS in webhook_body.rs.
GITHUB_EVENTS = ["issues", "issue_comment", "pull_request_review", "pull_request_review_comment",
                 "check_run", "check_suite", "push", "ping", "pull_request"]
GITLAB_EVENTS = {"issue_hook": 9, "note_hook": 11, "pipeline_hook": 13, "push_hook": 14}

MAX_SEED = 64 * 1024


def write(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED:
        return
    folder = SEEDS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name.replace("/", "_")).write_bytes(data)


def files(folder, *suffixes):
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.name.endswith(suffixes))


def texts_in(value):
    """Every string inside a JSON document: issue bodies, comments, model answers."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from texts_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from texts_in(item)


def webhooks():
    for path in files(DATA / "webhooks" / "github", ".json"):
        event = path.parent.name
        if event in GITHUB_EVENTS:
            write("webhook_body", f"github-{event}-{path.name}",
                  bytes([GITHUB_EVENTS.index(event)]) + path.read_bytes())
    for path in files(DATA / "webhooks" / "gitlab", ".json"):
        for prefix, pick in GITLAB_EVENTS.items():
            if path.name.startswith(prefix):
                write("webhook_body", f"gitlab-{path.name}", bytes([pick]) + path.read_bytes())


def answers():
    """Model answers as recorded: each goes to every edit format's target."""
    found = []
    for path in files(DATA / "search_replace", ".md", ".txt"):
        found.append((path.name, path.read_text(errors="replace")))
    for path in files(DATA / "llm", ".json") + files(DATA / "llama_cpp", ".json"):
        try:
            document = json.loads(path.read_text())
        except ValueError:
            continue
        for index, text in enumerate(t for t in texts_in(document) if "\n" in t):
            found.append((f"{path.parent.name}-{path.stem}-{index}", text))
    for name, text in found:
        for target in ("edits_fenced", "edits_json", "edits_search_replace", "edits_udiff"):
            write(target, name, text)
        write("sanitise", name, text)


def git(*args):
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=False).stdout


def history(commits=40):
    """Each text file a recent commit changed, as the file before and the change in each format."""
    for commit in git("log", f"-{commits}", "--format=%H").decode().split():
        changed = git("diff", "--name-only", "--diff-filter=M", f"{commit}^", commit).decode()
        for path in changed.split():
            before = git("show", f"{commit}^:{path}")
            after = git("show", f"{commit}:{path}")
            if len(before) > 16 * 1024 or b"\0" in before + after:
                continue
            diff = git("diff", "-U3", f"{commit}^", commit, "--", path)
            name = f"{commit[:10]}-{path}"
            write("edits_udiff", name, before + b"\0" + diff)
            write("edits_search_replace", name, before + b"\0" + search_replace(path, diff))
            write("edits_fenced", name, before + b"\0" + f"^^^{path}\n".encode() + after + b"^^^end\n")
            writes = {"summary": "from history", "writes": [{
                "path": path, "base_sha256": hashlib.sha256(before).hexdigest(),
                "content": after.decode(errors="replace")}]}
            write("edits_json", name, before + b"\0" + json.dumps(writes).encode())


def search_replace(path, diff):
    """A unified diff's hunks as SEARCH/REPLACE blocks."""
    blocks, old, new = [], [], []

    def flush():
        if old or new:
            blocks.append(f"{path}\n<<<<<<< SEARCH\n{''.join(old)}=======\n{''.join(new)}>>>>>>> REPLACE\n")
        old.clear()
        new.clear()

    for line in diff.decode(errors="replace").splitlines(keepends=True):
        if line.startswith("@@"):
            flush()
        elif line.startswith(("---", "+++", "diff ", "index ")):
            continue
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
        elif line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
    flush()
    return "\n".join(blocks).encode()


def reports():
    for path in files(DATA / "test_reports", ".txt"):
        write("test_output", path.name, path.read_bytes())
    for path in files(DATA / "test_reports", ".xml"):
        write("test_junit", path.name, path.read_bytes())


def issue_texts():
    for path in files(DATA / "issues", ".json") + files(DATA / "webhooks", ".json"):
        document = json.loads(path.read_text())
        for index, text in enumerate(t for t in texts_in(document) if len(t) > 20):
            write("sanitise", f"{path.parent.name}-{path.stem}-{index}", text)
    for path in files(DATA / "ci", ".txt", ".log"):
        write("sanitise", path.name, path.read_bytes()[-MAX_SEED:])
        write("test_output", path.name, path.read_bytes()[-MAX_SEED:])


def main():
    webhooks()
    answers()
    history()
    reports()
    issue_texts()
    for folder in sorted(SEEDS.iterdir()):
        print(f"fuzz/seeds/{folder.name}: {sum(1 for _ in folder.iterdir())} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
