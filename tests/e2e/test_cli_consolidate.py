"""`ferrex consolidate` end to end: dry run, fold, recall, undo, and refusals that write nothing."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ferrex.cli import cli

TURNS = [
    "Caroline: I went to an LGBTQ support group yesterday and it was powerful.",
    "Melanie: That sounds great! I painted a lake sunrise last year.",
    "Caroline: I am researching adoption agencies this month.",
    "Melanie: Wow, that is so lovely to hear! How did it all go?",  # states nothing
]


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def journal_head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def test_consolidate_from_the_command_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ids = []
    for turn in TURNS:
        code, out, err = run(home, "store", "--content", turn, "--source", "chat-1", "--json")
        assert code == 0, err
        ids.append(json.loads(out)["id"])
    head = journal_head(home)

    code, out, _ = run(home, "consolidate", "--dry-run", "--older-than", "0")
    assert code == 0 and "would fold 4 memories of source:chat-1" in out
    for bad, exit_code, words in (
        (("--older-than", "-1"), 2, "0 days or more"),
        ((), 2, "age"),  # no --older-than and no consolidation.after_days
        (("--undo", "mem_00000000000000000000000000"), 7, "no consolidation summary"),
        (("--undo", ids[0]), 7, "no consolidation summary"),
        (("--undo", ids[0], "--dry-run"), 2, "--undo"),
    ):
        code, _, err = run(home, "consolidate", *bad)
        assert code == exit_code and words in err, (bad, err)
    assert journal_head(home) == head  # neither the dry run nor a refusal wrote anything

    code, out, _ = run(home, "consolidate", "--older-than", "0", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["folded"] == 4 and not doc["dry_run"]
    (summary,) = doc["summaries"]
    assert summary["memory_ids"] == ids and summary["chars"] <= summary["source_chars"]
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    found = [r["id"] for r in json.loads(out)["results"]]
    assert found[0] == summary["summary_id"] and not set(found) & set(ids)

    code, out, _ = run(home, "consolidate", "--undo", summary["summary_id"])
    assert code == 0 and "4 memories back in recall" in out
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    assert json.loads(out)["results"][0]["id"] == ids[2]
    code, _, err = run(home, "consolidate", "--undo", summary["summary_id"])
    assert code == 7 and "no consolidation summary" in err


# -- consolidation keeps every fact (issue 45) -----------------------------------------------

CHATS = {
    "cluster": [
        ("user", "Hi there! Hope your week is going well so far, I have a few infra notes."),
        ("assistant", "Hello! Happy to help with whatever you need. What is on your mind today?"),
        ("user", "We run our prod cluster 'orca' on Kubernetes 1.27"),
        ("assistant", "Thanks for sharing, that is really helpful context to keep in mind!"),
    ],
    "lag": [
        ("user", "Quick follow-up on the database issue we discussed before, if you have time."),
        ("assistant", "Sure, happy to dig back into it with you. What did you find out?"),
        ("user", "The lag came from a nightly VACUUM FULL"),
        ("assistant", "Great, thanks for tracking that down, that makes a lot of sense now!"),
    ],
    "decisions": [
        (
            "user",
            "Hello again! Hope all is well, just wanted to log a couple of things.",
        ),
        ("assistant", "Hi! Of course, glad to help keep track of things. Go ahead whenever ready."),
        ("user", "We decided to move the billing service to Rust"),
        ("user", "I prefer squash merges over rebases"),
    ],
    "incident": [
        ("user", "The outage ticket is INC-90312"),
        ("assistant", "Great, thank you so much for letting me know, that is good to have noted!"),
        ("user", "The on-call rota lives in ops/oncall.yaml"),
        ("assistant", "Perfect, thanks a lot! Let me know if there is anything else to remember."),
    ],
    "launch": [
        ("user", "The launch is on March 14"),
        ("assistant", "Wonderful news, congratulations to the whole team and good luck with it!"),
        ("user", "Our beta has 340 users"),
        ("assistant", "Nice, that is great to hear! Sounds like things are going really well."),
    ],
}
QUESTIONS = [
    ("which Kubernetes version does the prod cluster run", "Kubernetes 1.27"),
    ("what caused the replication lag", "nightly VACUUM FULL"),
    ("which language is the billing service moving to", "billing service to Rust"),
    ("what kind of merges do I prefer", "squash merges"),
    ("what is the outage ticket number", "INC-90312"),
    ("where is the on-call rota kept", "ops/oncall.yaml"),
    ("when is the launch", "March 14"),
    ("how many users does the beta have", "340 users"),
]


def _answers(home: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for question, _ in QUESTIONS:
        code, out, err = run(home, "recall", question, "--limit", "5", "--json")
        assert code == 0, err
        found[question] = [r.get("content") or "" for r in json.loads(out)["results"]]
    return found


def test_consolidation_keeps_every_fact_of_a_chat_export(tmp_path: Path) -> None:
    """Short chats of facts and pleasantries, imported as a ChatGPT export: after
    `consolidate --older-than 0` every question is still answered by what recall returns,
    and the summaries dropped only turns that state nothing."""
    from tests.chat_exports import gpt_linear

    home = tmp_path / "home"
    export = tmp_path / "conversations.json"
    convs = [gpt_linear(f"conv-{name}", name, turns) for name, turns in CHATS.items()]
    export.write_text(json.dumps(convs), encoding="utf-8")
    code, out, err = run(home, "import", str(export), "--json")
    assert code == 0, err
    before = _answers(home)
    for question, answer in QUESTIONS:
        assert any(answer in text for text in before[question]), question

    code, out, err = run(home, "consolidate", "--older-than", "0", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["folded"] >= 8 and doc["chars"] < doc["source_chars"]  # it still pays
    after = _answers(home)
    lost = [q for q, answer in QUESTIONS if not any(answer in t for t in after[q])]
    assert lost == []
    code, out, _ = run(home, "recall", "what is the outage ticket number", "--json")
    best = json.loads(out)["results"][0]
    assert best["id"] in {s["summary_id"] for s in doc["summaries"]}
    dropped = "Perfect, thanks a lot! Let me know if there is anything else to remember."
    assert dropped not in best["content"]  # what carries no fact may go


def test_memory_server_observations_of_different_entities_never_fold_together(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    graph = tmp_path / "memory.json"
    lines = [
        {"type": "entity", "name": "orca", "entityType": "cluster",
         "observations": ["runs the payments workloads", "is patched on weekends"]},
        {"type": "entity", "name": "billing", "entityType": "service",
         "observations": ["is owned by the money team", "bills customers monthly"]},
    ]  # fmt: skip
    graph.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, _, err = run(home, "import", str(graph), "--format", "memory-server")
    assert code == 0, err
    code, out, err = run(home, "consolidate", "--older-than", "0", "--json")
    assert code == 0, err
    code, dump, _ = run(home, "export", "jsonl", "-")
    texts = {
        line["id"]: line.get("content") for line in map(json.loads, dump.splitlines())
        if "id" in line
    }  # fmt: skip
    for summary in json.loads(out)["summaries"]:
        owners = {str(texts.get(m, "")).split(":")[0] for m in summary["memory_ids"]}
        assert len(owners) == 1, summary  # one entity's observations, never two
    # every observation is about its entity: each states something, none is folded away
    code, out, _ = run(home, "recall", "who owns billing", "--json")
    assert any("money team" in (r.get("content") or "") for r in json.loads(out)["results"])


def test_summaries_are_marked_listed_shown_and_undone_all(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for source in ("chat-1", "chat-2"):
        for turn in TURNS:
            code, _, err = run(home, "store", "--content", turn, "--source", source)
            assert code == 0, err
    code, out, err = run(home, "consolidate", "--older-than", "0", "--json")
    assert code == 0, err
    made = {s["summary_id"]: s for s in json.loads(out)["summaries"]}
    assert len(made) == 2

    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    best = json.loads(out)["results"][0]
    assert best["summary_of"].startswith("4 memories (") and best["id"] in best["summary_of"]
    code, out, _ = run(home, "recall", "adoption agencies")
    assert "summary of 4 memories" in out and f"consolidate --show {best['id']}" in out

    code, out, _ = run(home, "consolidate", "--list")
    assert code == 0 and all(f"{s}  4 memories of source:" in out for s in made)
    code, out, _ = run(home, "consolidate", "--show", best["id"])
    assert code == 0 and "How did it all go?" in out  # the sources, what was dropped too
    assert all(m in out for m in made[best["id"]]["memory_ids"])

    head = journal_head(home)
    for bad, exit_code, words in (
        (("--undo-all", "--older-than", "0"), 2, "takes no --dry-run or --older-than"),
        (("--undo-all", "--list"), 2, "cannot be combined"),
        (("--show", "mem_00000000000000000000000000"), 7, "no consolidation summary"),
    ):
        code, _, err = run(home, "consolidate", *bad)
        assert code == exit_code and words in err, (bad, err)
    assert journal_head(home) == head

    code, out, err = run(home, "consolidate", "--undo-all", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert {u["summary_id"] for u in doc["undone"]} == set(made) and doc["restored"] == 8
    code, out, _ = run(home, "consolidate", "--list")
    assert out.strip() == "no summaries"
    code, out, _ = run(home, "consolidate", "--undo-all")
    assert code == 0 and "no summaries to undo" in out
    code, out, _ = run(home, "recall", "adoption agencies", "--json")
    assert "summary_of" not in json.loads(out)["results"][0]


def test_consolidate_help_names_the_default_unit() -> None:
    result = CliRunner().invoke(cli, ["consolidate", "--help"])
    assert result.exit_code == 0
    assert "default unit is the turn" in " ".join(result.stdout.split())


def test_git_export_counts_folded_memories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for turn in TURNS:
        assert run(home, "store", "--content", turn, "--source", "chat-1")[0] == 0
    assert run(home, "consolidate", "--older-than", "0")[0] == 0
    repo = tmp_path / "audit"
    code, out, err = run(home, "export", "git", str(repo))
    assert code == 0, err
    assert "4 folded into 1 summary" in out
    import subprocess

    message = subprocess.run(
        ["git", "-C", str(repo), "log", "-1", "--format=%B"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "4 folded into 1 summary" in message.splitlines()[0]
    assert "Folded:     4 folded into 1 summary" in message
