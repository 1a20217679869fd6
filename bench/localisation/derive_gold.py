#!/usr/bin/env python3
"""Derive (or check) the gold fields of the localisation benchmark from git.

For every record in issues.jsonl this recomputes, from ``fix_commit`` alone:

* ``base_commit``        -- the fix commit's first parent;
* ``gold``               -- every non-test, non-doc file the fix changed, with
                            the base-side line ranges of ``git diff -U0``;
* ``test_files_changed`` -- the test files the fix changed.

Usage:
    derive_gold.py --mirrors DIR [--jsonl issues.jsonl]          # check
    derive_gold.py --mirrors DIR [--jsonl issues.jsonl] --write  # fill in

DIR holds one git directory per repository, named ``owner+name`` (as the
fetch tool lays them out: ``DIR/owner+name/repo`` or ``DIR/owner+name/repo/.git``
or a bare ``DIR/owner+name``).  Standard library only.  Exit status 1 on any
mismatch or error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

TEST_DIRS = {"test", "tests", "testing", "__tests__", "spec", "testdata"}
DOC_DIRS = {"docs", "doc", "man", "changelog"}
DOC_EXTS = (".md", ".rst", ".txt")
DOC_NAMES = re.compile(r"^(CHANGELOG|CHANGES|AUTHORS)", re.IGNORECASE)
TEST_NAMES = [
    re.compile(r"^test_.*\.py$"),
    re.compile(r"^.*_test\.py$"),
    re.compile(r"^.*_test\.go$"),
    re.compile(r"^.*\.test\.(js|ts|mjs|cjs|jsx|tsx)$"),
    re.compile(r"^.*_spec\.[^/]+$"),
    re.compile(r"^tests\.rs$"),
]


def is_test(path: str) -> bool:
    parts = path.split("/")
    if any(p in TEST_DIRS for p in parts[:-1]):
        return True
    return any(r.match(parts[-1]) for r in TEST_NAMES)


def is_doc(path: str) -> bool:
    parts = path.split("/")
    if any(p.lower() in DOC_DIRS for p in parts[:-1]):
        return True
    if path.lower().endswith(DOC_EXTS):
        return True
    return bool(DOC_NAMES.match(parts[-1]))


def find_git_dir(mirrors: str, repo: str) -> str:
    root = os.path.join(mirrors, repo.replace("/", "+"))
    for cand in (os.path.join(root, "repo", ".git"), os.path.join(root, "repo"),
                 os.path.join(root, ".git"), root):
        if os.path.isfile(os.path.join(cand, "HEAD")) and os.path.isdir(
                os.path.join(cand, "objects")):
            return cand
    raise FileNotFoundError(f"no git directory for {repo} under {root}")


def git(gd: str, *args: str) -> str:
    out = subprocess.run(["git", "--git-dir", gd, *args], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return out.stdout.decode("utf-8", "replace")


HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def merge_ranges(ranges):
    out = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def derive(gd: str, fix: str) -> dict:
    """Return base_commit, gold, test_files_changed for one fix commit."""
    parents = git(gd, "rev-list", "--parents", "-n", "1", fix).split()
    if len(parents) < 2:
        raise ValueError(f"{fix} has no parent")
    base = parents[1]
    status = git(gd, "diff", "--no-renames", "--name-status", base, fix)
    changed = []
    for line in status.splitlines():
        st, path = line.split("\t", 1)
        changed.append((st[0], path))
    diff = git(gd, "diff", "--no-renames", "--no-ext-diff", "--no-color",
               "--src-prefix=a/", "--dst-prefix=b/", "-U0", base, fix)
    ranges: dict[str, list] = {}
    cur = None
    in_header = False  # "--- a/path" only counts between "diff --git" and the first hunk
    for line in diff.splitlines():
        if line.startswith("diff --git "):
            cur = None
            in_header = True
        elif in_header and line.startswith("--- "):
            p = line[4:]
            cur = p[2:] if p.startswith("a/") else None
            if cur is not None:
                ranges.setdefault(cur, [])
        elif line.startswith("@@ "):
            in_header = False
            m = HUNK.match(line)
            if cur is None or m is None:
                continue
            a = int(m.group(1))
            b = 1 if m.group(2) is None else int(m.group(2))
            if b > 0:
                ranges[cur].append((a, a + b - 1))
            else:
                ranges[cur].append((max(1, a), max(1, a + 1)))
    gold, tests = [], []
    for st, path in sorted(changed, key=lambda x: x[1]):
        if is_test(path):
            tests.append(path)
            continue
        if is_doc(path):
            continue
        if st == "A":
            gold.append({"path": path, "lines": [], "new_file": True})
        else:
            gold.append({"path": path, "lines": merge_ranges(ranges.get(path, []))})
    return {"base_commit": base, "gold": gold, "test_files_changed": tests}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mirrors", required=True, help="folder of owner+name git dirs")
    ap.add_argument("--jsonl", default=os.path.join(HERE, "issues.jsonl"))
    ap.add_argument("--write", action="store_true",
                    help="rewrite the jsonl with the derived fields instead of checking")
    args = ap.parse_args()

    records, errors = [], []
    with open(args.jsonl, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as e:
                    errors.append(f"line {n}: bad JSON: {e}")
    gds: dict[str, str] = {}
    for rec in records:
        rid = rec.get("id", "?")
        try:
            gd = gds.get(rec["repo"]) or gds.setdefault(rec["repo"], find_git_dir(args.mirrors, rec["repo"]))
            d = derive(gd, rec["fix_commit"])
        except Exception as e:  # noqa: BLE001
            errors.append(f"{rid}: {e}")
            continue
        if not d["gold"]:
            errors.append(f"{rid}: fix changes no non-test source file")
        if args.write:
            rec.update(d)
            continue
        for key in ("base_commit", "gold", "test_files_changed"):
            if rec.get(key) != d[key]:
                errors.append(f"{rid}: {key} differs: stored {rec.get(key)!r}, derived {d[key]!r}")
    if args.write and not errors:
        keys = ["id", "repo", "language", "issue", "url", "fix_commit", "base_commit",
                "title", "body", "gold", "test_files_changed"]
        with open(args.jsonl, "w", encoding="utf-8") as f:
            for rec in records:
                ordered = {k: rec[k] for k in keys if k in rec}
                ordered.update({k: v for k, v in rec.items() if k not in ordered})
                f.write(json.dumps(ordered, ensure_ascii=False) + "\n")
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    print(f"{len(records)} records {'written' if args.write else 'match'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
