#!/usr/bin/env python3
"""Rebuilds the fuzz seed corpora from testdata/ (run from the repository root:
`python3 fuzz/seeds/build.py`). Each seed is one file named after a hash of its bytes.

- parse_evaluate: every line of testdata/*.jsonl, each adversarial case's line (generated
  cases are cut to their first 4 KiB), and each testdata stream whole (taint and budgets).
- policy_load: policy.example.json, policies/*.json and the hand-written seeds already there.
- tokens: testdata/provenance/*.jsonl whole and line by line, and testdata/provenance/*.txt.
"""
import base64, glob, hashlib, json, os, shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SEEDS = os.path.join(ROOT, "fuzz", "seeds")


def put(target, data):
    folder = os.path.join(SEEDS, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def generated(spec):
    fill = "".join(p["text"] * min(p.get("count", 64), 200) for p in spec["parts"])
    return spec["template"].replace("@@", fill).encode()[:4096]


for path in sorted(glob.glob(os.path.join(ROOT, "testdata", "*.jsonl"))):
    data = open(path, "rb").read()
    put("parse_evaluate", data)
    for line in data.split(b"\n"):
        if line.strip():
            put("parse_evaluate", line)
for path in sorted(glob.glob(os.path.join(ROOT, "testdata", "adversarial", "*.jsonl"))):
    for row in open(path, encoding="utf-8").read().split("\n")[1:]:
        if not row.strip():
            continue
        case = json.loads(row)
        if "line" in case:
            put("parse_evaluate", case["line"].encode())
        elif "lineBase64" in case:
            put("parse_evaluate", base64.b64decode(case["lineBase64"]))
        else:
            put("parse_evaluate", generated(case["generate"]))
for path in [os.path.join(ROOT, "policy.example.json")] + sorted(glob.glob(os.path.join(ROOT, "policies", "*.json"))):
    shutil.copy(path, os.path.join(SEEDS, "policy_load", os.path.basename(path)))
# tokens: each provenance stream whole, and each of its lines (tool outputs and calls).
for path in sorted(glob.glob(os.path.join(ROOT, "testdata", "provenance", "*.jsonl"))):
    data = open(path, "rb").read()
    put("tokens", data)
    for line in data.split(b"\n"):
        if line.strip():
            put("tokens", line)
for path in sorted(glob.glob(os.path.join(ROOT, "testdata", "provenance", "*.txt"))):
    put("tokens", open(path, "rb").read())
