"""`ferrex store`, `forget` and `import` end to end, with their exit codes."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from ferrex.app import App
from ferrex.cli import cli
from ferrex.cli import projections as projections_cli
from ferrex.errors import BackendUnavailable
from ferrex.ownership import try_lock
from projections.generations import read_pointer
from tests.e2e.mcp_helpers import FERREX


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("memory-home")


def run(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["--home", str(home), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def journal_head(home: Path) -> int:
    code, out, _ = run(home, "journal", "verify", "--json")
    assert code == 0
    return int(json.loads(out)["head_position"])


def test_store_then_duplicate_then_supersede(home: Path) -> None:
    code, out, _ = run(home, "store", "--content", "The VPN certificate expires on 2027-01-15",
                       "--entity", "VPN", "--json")  # fmt: skip
    first = json.loads(out)
    assert code == 0 and first["status"] == "stored" and first["type"] == "episodic"
    head = journal_head(home)
    code, _, err = run(home, "store", "--content", "The VPN certificate expires on 2027-01-15.")
    assert code == 7 and "duplicate" in err and first["id"] in err
    assert journal_head(home) == head
    code, out, _ = run(home, "store", "--content", "The VPN certificate was renewed until 2028",
                       "--supersedes", first["id"], "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["superseded"] == [first["id"]]


def test_a_late_report_of_an_older_value_is_stored_as_history_and_says_so(home: Path) -> None:
    fact = ("store", "--subject", "ledger-api", "--predicate", "runs on")
    code, out, _ = run(home, *fact, "--object", "Node 22", "--valid-from", "2026-11-01", "--json")
    current = json.loads(out)
    assert code == 0 and current["status"] == "stored"
    code, out, err = run(home, *fact, "--object", "Node 20", "--valid-from", "2026-06-01")
    assert code == 0 and "stored as history" in out and current["id"] in out
    assert err.startswith("note: valid from 2026-06-01") and "stays current" in err


def test_a_plain_store_says_what_it_flagged_kept_or_replaced(home: Path) -> None:
    # It printed the id alone: a possible conflict, a value kept beside another or one
    # replaced was told to an agent, not to someone at the terminal.
    def fact(subject: str, predicate: str, obj: str, *more: str) -> tuple[str, str]:
        code, out, err = run(home, "store", "--subject", subject, "--predicate", predicate,
                             "--object", obj, *more)  # fmt: skip
        assert code == 0, err
        return out.split()[0], err

    ghent, _ = fact("Brightwater HQ", "based in", "Ghent")
    _, err = fact("Brightwater HQ", "located in", "Tartu")
    assert err.startswith("note: ") and f"supersedes={ghent}" in err and "differs_from" in err
    orders, _ = fact("settlement DAG", "reads from", "orders")
    _, err = fact("settlement DAG", "reads from", "refunds")
    assert f"kept beside {orders}" in err, err
    old, _ = fact("settlement DAG", "schedule", "02:00 UTC")
    _, err = fact("settlement DAG", "schedule", "03:30 UTC")
    assert err.startswith("note: ") and old in err, err


def test_store_bad_input_exits_2_and_writes_nothing(home: Path) -> None:
    head = journal_head(home) if (home / "journal").exists() else 0
    for args in (
        ["store", "--subject", "api"],
        ["store", "--content", "ok", "--confidence", "2"],
        ["store", "--content", "ok", "--context", "{not json"],
        ["store", "--content", "ok", "--valid-from", "yesterday"],
        ["store"],
    ):
        code, _, err = run(home, *args)
        assert code == 2 and "error [invalid_input]" in err, (args, err)
    assert (journal_head(home) if (home / "journal").exists() else 0) == head


def test_a_context_that_is_not_json_names_the_option(home: Path) -> None:
    # It said "context in options is not JSON", with no word of what to write instead.
    code, _, err = run(home, "store", "--content", "ok", "--context", "{ticket: INC-1}")
    assert code == 2 and "error [invalid_input]: --context is not JSON" in err, err
    assert "in options" not in err and """--context '{"ticket": "INC-1"}'""" in err, err
    code, out, err = run(home, "store", "--content", "Paged for INC-7: disk full on db-2",
                         "--context", '{"ticket": "INC-7"}', "--json")  # fmt: skip
    assert code == 0, err
    memory_id = json.loads(out)["id"]
    code, out, _ = run(home, "export", "jsonl", "-")
    dumped = [json.loads(line) for line in out.splitlines()]
    assert [d["context"] for d in dumped if d.get("id") == memory_id] == [{"ticket": "INC-7"}]


def test_forget(home: Path) -> None:
    code, out, _ = run(home, "store", "--content", "Carol is on call this week", "--json")
    memory_id = json.loads(out)["id"]
    code, out, _ = run(home, "forget", memory_id, "mem_NOPE", "--json")
    doc = json.loads(out)
    # the known one is forgotten; the unknown one makes the command fail (exit 7)
    assert code == 7 and doc["forgotten"] == [memory_id] and doc["not_found"] == ["mem_NOPE"]
    code, _, err = run(home, "forget", "two words")
    assert code == 2 and "not a memory id" in err


def test_import_reports_every_line(home: Path, tmp_path: Path) -> None:
    lines = [
        {"subject": "web", "predicate": "uses", "object": "react 18", "entities": ["React"]},
        {"subject": "web", "predicate": "depends on", "object": "react 19"},
        {"content": "Shipped the onboarding redesign on 2026-10-02",
         "valid_from": "2026-10-02T12:00:00Z"},
        {"content": "Shipped the onboarding redesign on 2026-10-02."},
        {"name": "release web", "steps": ["npm run build", "upload to CDN"]},
        {"content": ""},
        {"content": "ok", "colour": "blue"},
        {"subject": "web", "predicate": "owned by", "object": "team A", "multi_valued": True},
        {"subject": "web", "predicate": "owned by", "object": "team B", "multi_valued": True},
    ]  # fmt: skip
    file = tmp_path / "in.jsonl"
    file.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n")
    code, out, _ = run(home, "import", str(file), "--json")
    doc = json.loads(out)
    statuses = [line["status"] for line in doc["lines"]]
    assert statuses == ["stored", "stored", "stored", "stored", "stored", "invalid",
                        "invalid", "stored", "stored", "invalid"]  # fmt: skip
    assert code == 2, "invalid lines make the exit code 2"
    assert doc["lines"][1]["superseded"] == [doc["lines"][0]["id"]]
    # The same text on another line is another event, kept beside the first and named.
    assert doc["lines"][3]["similar"]["id"] == doc["lines"][2]["id"]
    assert "line of an import" in doc["lines"][3]["similar"]["kept_because"]
    assert "colour" in doc["lines"][6]["message"]
    # The same file again stores nothing: every line imported before is skipped (the facts
    # do not replay their history, the procedure gets no new version).
    head = journal_head(home)
    code, out, _ = run(home, "import", str(file), "--json")
    again = [(line["status"], line.get("code")) for line in json.loads(out)["lines"]]
    assert again == [("skipped", "duplicate")] * 5 + [("invalid", "invalid_input")] * 2 + [
        ("skipped", "duplicate")
    ] * 2 + [("invalid", "invalid_input")]
    assert code == 2 and journal_head(home) == head


def test_import_from_stdin_and_unreadable_file(home: Path, tmp_path: Path) -> None:
    line = json.dumps({"content": "Dana joined the SRE team in May"}) + "\n"
    code, out, _ = run(home, "import", "-", "--json", stdin=line)
    assert code == 0 and json.loads(out)["counts"] == {"stored": 1}
    code, _, err = run(home, "import", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "cannot read" in err


def test_import_beside_an_owner_is_refused_before_the_model_loads(tmp_path: Path) -> None:
    """Another process owns the stores: import says busy at once, in a terminal too, without
    "loading model…" first (it loaded the model, then refused, then waited for the load)."""
    home = tmp_path / "home"
    code, _, err = run(home, "store", "--content", "Dana joined the SRE team in May")
    assert code == 0, err
    head = journal_head(home)
    lines = tmp_path / "lines.jsonl"
    lines.write_text(json.dumps({"content": "Sam moved to the platform team"}) + "\n")
    owner = try_lock(home)  # this test process owns the stores, as a running server would
    assert owner is not None
    leader, follower = pty.openpty()  # "loading model…" shows only on a terminal
    try:
        process = subprocess.run(
            [FERREX, "--home", str(home), "import", str(lines)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower, timeout=300,
        )  # fmt: skip
        os.close(follower)
        err = _drain(leader)
    finally:
        os.close(leader)
        os.close(owner)
    assert process.returncode == 5, err
    assert "error [busy]" in err and "loading model" not in err, err
    assert journal_head(home) == head


def _drain(fd: int) -> str:
    """What a finished process wrote to a pseudo-terminal (EIO once it is read out)."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def test_backfill_normalized_predicates(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, out, _ = run(home, "store", "--subject", "web", "--predicate", "talks to",
                       "--object", "the api v1", "--json")  # fmt: skip
    old_id = json.loads(out)["id"]
    (home / "ferrex.toml").write_text('[predicates.synonyms]\ncalls = ["talks to"]\n')
    code, out, _ = run(home, "backfill", "normalized-predicates", "--dry-run", "--json")
    doc = json.loads(out)
    assert code == 0 and not doc["applied"]
    assert doc["changes"] == [
        {"id": old_id, "subject": "web", "predicate": "talks to", "before": "talks_to",
         "after": "calls"}
    ]  # fmt: skip
    code, out, _ = run(home, "backfill", "normalized-predicates", "--json")
    assert code == 0 and json.loads(out)["applied"]
    code, out, _ = run(home, "backfill", "normalized-predicates", "--dry-run", "--json")
    assert json.loads(out)["count"] == 0
    # Under the new groups, "calls" is the same relation: the new fact replaces the old.
    code, out, _ = run(home, "store", "--subject", "web", "--predicate", "calls",
                       "--object", "the api v2", "--json")  # fmt: skip
    assert code == 0 and json.loads(out)["superseded"] == [old_id]
    (home / "ferrex.toml").write_text('[predicates.synonyms]\ncalls = "talks to"\n')
    code, _, err = run(home, "backfill", "normalized-predicates", "--dry-run")
    assert code == 2 and "must be a list" in err


def test_import_decides_lines_in_file_order(tmp_path: Path) -> None:
    """A multi-valued fact, then a single-valued one on the same subject and predicate: in
    file order the second replaces the first, as two stores one after the other would."""
    lines = [
        {"subject": "billing-svc", "predicate": "owner", "object": "Ann Weller",
         "multi_valued": True},
        {"subject": "billing-svc", "predicate": "owner", "object": "Bob Okafor"},
    ]  # fmt: skip
    file = tmp_path / "ordered.jsonl"
    file.write_text("\n".join(json.dumps(line) for line in lines))
    code, out, _ = run(tmp_path / "home", "import", str(file), "--json")
    assert code == 0, out
    first, second = json.loads(out)["lines"]
    assert second["superseded"] == [first["id"]]
    assert first["position"] < second["position"]


def test_import_is_idempotent_by_place_and_text_not_by_similarity(tmp_path: Path) -> None:
    """A conversation's repeated turns are all stored; importing it again stores nothing;
    a line added or changed later is stored on the next import."""
    home = tmp_path / "home"
    turns = ["Sam: Did the deploy go out?", "Ana: Thanks!", "Sam: It did, at noon.",
             "Ana: Thanks!", "Sam: Bye!", "Ana: Bye!", "Ana: Thanks!"]  # fmt: skip
    file = tmp_path / "chat.jsonl"
    file.write_text("".join(json.dumps({"content": t, "namespace": "chat"}) + "\n" for t in turns))
    code, out, _ = run(home, "import", str(file), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"stored": 7}, out
    ids = [line["id"] for line in doc["lines"]]
    assert len(set(ids)) == 7
    head = journal_head(home)

    code, out, _ = run(home, "import", str(file), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"skipped": 7}
    assert [line["ids"] for line in doc["lines"]] == [[i] for i in ids]
    assert journal_head(home) == head, "a second import writes nothing"

    # Reformatting a line changes nothing; a new line and a changed one are stored.
    lines = file.read_text().splitlines()
    lines[0] = json.dumps({"namespace": "chat", "content": turns[0]}, indent=None)
    lines[4] = json.dumps({"content": "Sam: See you!", "namespace": "chat"})
    lines.append(json.dumps({"content": "Ana: Thanks!", "namespace": "chat"}))
    file.write_text("\n".join(lines) + "\n")
    code, out, _ = run(home, "import", str(file), "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"skipped": 6, "stored": 2}, out
    assert [line["line"] for line in doc["lines"] if line["status"] == "stored"] == [5, 8]

    # Outside an import, the same text is still a duplicate of what the import stored.
    code, _, err = run(home, "store", "--content", "Sam: Did the deploy go out?",
                       "--namespace", "chat")  # fmt: skip
    assert code == 7 and "duplicate" in err


def test_store_names_a_near_copy_it_kept_on_stderr(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, first, _ = run(
        home, "store", "--content", "payments-api calls ledger-api for every refund"
    )
    assert code == 0
    code, out, err = run(
        home, "store", "--content", "ledger-api calls payments-api for every refund"
    )
    assert code == 0 and out.strip() != first.strip()
    assert f"near-identical to {first.split()[0]} but kept" in err and "order" in err


def test_a_large_import_ends_by_building_the_vector_indexes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import that stores ``INDEX_AFTER`` memories or more builds the vector indexes
    (what `ferrex optimize` does) before it reports; a smaller one, or one told --no-index,
    leaves them as they are."""
    monkeypatch.setattr(projections_cli, "INDEX_AFTER", 3)
    builds: list[dict[str, bool]] = []
    build = App.index_vectors

    def counted(app: App) -> dict[str, bool]:
        done = build(app)
        builds.append(done)
        return done

    monkeypatch.setattr(App, "index_vectors", counted)
    home = tmp_path / "home"

    def notes(name: str, texts: list[str]) -> str:
        file = tmp_path / name
        file.write_text("".join(json.dumps({"content": t}) + "\n" for t in texts))
        return str(file)

    big = notes("big.jsonl", ["the lake's nightly load starts at 02:00",
                              "Priya reviews the terraform changes",
                              "the pager rota moved to Tuesdays",
                              "ledger-api logs go to the audit bucket"])  # fmt: skip
    code, out, _ = run(home, "import", big, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"stored": 4}, out
    live = read_pointer(home)
    assert live is not None
    assert set(doc["indexed"]["collections"]) == {live.memories, live.entities}
    assert doc["indexed"]["seconds"] >= 0 and len(builds) == 1

    small = notes("small.jsonl", ["the VPN certificate expires in March",
                                  "Dana owns the billing runbook"])  # fmt: skip
    code, out, _ = run(home, "import", small, "--json")
    assert code == 0 and json.loads(out)["indexed"] is None and len(builds) == 1

    skipped = notes("skipped.jsonl", ["staging uses the m5 instances now",
                                      "the design review moved to Thursday",
                                      "Omar is on leave until the 14th"])  # fmt: skip
    code, out, _ = run(home, "import", skipped, "--json", "--no-index")
    assert code == 0 and json.loads(out)["indexed"] is None and len(builds) == 1

    told = notes("told.jsonl", ["the CDN purge needs two approvals",
                                "grafana dashboards live in the ops folder",
                                "the quarterly budget review is on the 3rd"])  # fmt: skip
    code, out, err = run(home, "import", told)
    assert code == 0 and "3 stored" in out and len(builds) == 2
    assert "vector indexes: none needed at this size" in err  # a tiny home

    def failing(app: App) -> dict[str, bool]:
        raise BackendUnavailable("the disk is full", hint="free some space")

    monkeypatch.setattr(App, "index_vectors", failing)
    failed = notes("failed.jsonl", ["the incident review template moved to the wiki",
                                    "backups are kept for 35 days",
                                    "Lena pairs with Omar on the billing migration"])  # fmt: skip
    code, out, _ = run(home, "import", failed, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counts"] == {"stored": 3}  # what was stored stands
    assert doc["indexed"]["error"]["code"] == BackendUnavailable("").code
    code, out, err = run(home, "import", notes("again.jsonl", ["one", "two", "three"]))
    assert code == 0 and "3 stored" in out and "the vector indexes were not built" in err
