"""``python -m tools.eval_agent_notes`` end to end on a slice of its set: 30 notes, 6 questions.

The tool imports the notes with a real ``ferrex import`` and asks through a real MCP stdio
server; this checks that the notes arrive whole, that the halves keep the held-out questions
out of the per-question report, and that the figures mean what they say.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SET = ROOT / "golden_set" / "agent_notes"
# One question of each kind, and a second unanswerable one; q-101 (identifier), q-216 and
# q-217 fall in the tuning half, the others in the held-out half.
QUESTIONS = ("q-001", "q-101", "q-143", "q-176", "q-216", "q-217")
NOTES = 30


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text("utf-8").splitlines() if x.strip()]


def test_a_slice_of_the_notes_through_import_and_mcp(tmp_path: Path) -> None:
    questions = [q for q in _lines(SET / "questions.jsonl") if q["id"] in QUESTIONS]
    notes = _lines(SET / "notes.jsonl")
    answers = {n for q in questions for n in q["answers"]}
    chosen = [n for n in notes if n["id"] in answers]
    chosen += [n for n in notes if n["id"] not in answers][: NOTES - len(chosen)]
    chosen.sort(key=lambda n: n["id"])
    (tmp_path / "notes.jsonl").write_text("".join(json.dumps(n) + "\n" for n in chosen))
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))

    done = subprocess.run(
        [sys.executable, "-m", "tools.eval_agent_notes", "--json",
         "--notes", str(tmp_path / "notes.jsonl"),
         "--questions", str(tmp_path / "questions.jsonl"), "--show", "3"],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)

    assert report["import"]["counts"] == {"stored": NOTES}
    assert report["import"]["stored_as"]["semantic as semantic"] > 0
    # Only the tuning half is listed question by question.
    listed = {q["id"]: q for q in report["questions"]}
    assert set(listed) == {"q-101", "q-216", "q-217"}
    assert set(report["halves"]) == {"tuning", "held-out"}
    held_out = report["halves"]["held-out"]
    assert {"paraphrase", "time", "filtered", "all"} <= set(held_out)
    assert held_out["all"]["questions"] == 3

    # q-101 names its ticket exactly: both of its notes come back at the top, untrimmed.
    ticket = listed["q-101"]
    assert ticket["untrimmed"]["hit"] and ticket["untrimmed"]["recall"] == 1.0
    assert ticket["untrimmed@10"]["recall"] == 1.0
    assert ticket["untrimmed"]["rows"] == 5
    for q in listed.values():  # trimming only ever leaves results out
        assert q["default"]["rows"] <= q["untrimmed"]["rows"] <= 5
        assert q["default"]["text_tokens"] <= q["untrimmed"]["text_tokens"]
    tuning = report["halves"]["tuning"]
    assert tuning["identifier"]["untrimmed"]["recall@10"] == 1.0
    assert 0 < tuning["all"]["text_tokens_ratio"] <= 1
    # A miss shown to whoever tunes carries what the explained recall ranked.
    for miss in report["misses"]:
        assert miss["id"] in listed and miss["explained"]
