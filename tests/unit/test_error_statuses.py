"""Every error code ferrex raises has one documented HTTP status, and the API answers it.

The codes are found in the source (``code="..."`` arguments, ``code = "..."`` on error
classes, ``{"code": "..."}`` documents; the journal's codes as ``journal.<code>``), so a new
code without a status fails here. Each is then raised behind the real routes (a hub that
fails with it) and its answer is checked against :data:`~ferrex.server.dashboard.edge.ERRORS`
and the OpenAPI document.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from ferrex.errors import (
    ERROR_CLASSES,
    Duplicate,
    ExportDiverged,
    FerrexError,
    Internal,
    JournalDamagedFailure,
    JournalFailure,
    ModelMismatch,
    NotFound,
    Refused,
    SecretRefused,
    UsageError,
    from_journal_error,
)
from ferrex.server.caller import error_document
from ferrex.server.dashboard.edge import ERRORS, RETRY_AFTER_SECONDS, ErrorStatus, status_of
from ferrex.server.dashboard.openapi import openapi_document
from ferrex.server.dashboard.web import Dashboard
from ferrex.server.mcp_server import build_server, tool_inputs
from journal.errors import JournalDamaged, JournalError

ROOT = Path(__file__).resolve().parents[2]


def _text(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _codes_in(package: str) -> set[str]:
    """The codes ``package`` raises: ``code="x"`` arguments, ``code = "x"`` class attributes
    and ``{"code": "x"}`` documents (the journal's prefixed as ferrex translates them)."""
    found: set[str | None] = set()
    prefix = "journal." if package == "journal" else ""
    for path in (ROOT / package).rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.keyword) and node.arg == "code":
                found.add(_text(node.value))
            elif isinstance(node, ast.ClassDef):
                found.update(
                    prefix + code
                    for statement in node.body
                    if isinstance(statement, ast.Assign)
                    and [getattr(t, "id", None) for t in statement.targets] == ["code"]
                    and (code := _text(statement.value)) is not None
                )
            elif isinstance(node, ast.Dict):
                found.update(_text(v) for k, v in zip(node.keys, node.values, strict=True)
                             if _text(k) == "code")  # fmt: skip
    return {code for code in found if code is not None}


SOURCE_CODES = _codes_in("ferrex") | _codes_in("journal") | _codes_in("projections")


def test_the_source_is_searched_for_real() -> None:
    # the search finds codes of each shape: an argument, a class, a document, the journal's
    assert {"secret_refused", "storage_full", "internal", "journal.damaged"} <= SOURCE_CODES


def test_every_code_in_the_source_has_one_documented_status() -> None:
    missing = sorted(SOURCE_CODES - set(ERRORS))
    assert not missing, f"codes without an HTTP status in edge.ERRORS: {missing}"
    for code, found in ERRORS.items():
        assert 400 <= found.status < 600, code
        # 500 only for a failure of the server itself: a refusal must not look retryable
        assert (found.status == 500) == (code in ("internal", "error")), code


def test_refusals_are_4xx_so_clients_do_not_retry_them() -> None:
    for code in ("secret_refused", "model_unauthorized", "model_bad_response",
                 "model_mismatch", "no_home", "duplicate", "read_only"):  # fmt: skip
        assert 400 <= status_of(code) < 500, code
    assert status_of("secret_refused") == 422
    assert status_of("model_mismatch") == status_of("no_home") == 409
    assert status_of("model_unauthorized") == status_of("model_bad_response") == 424
    assert status_of("backend_unavailable") == status_of("journal.unavailable") == 503


class _FailingHub:
    """A hub whose every call raises the error it is given (what a tool would raise)."""

    home = Path("/nonexistent/ferrex-home")  # nothing is written: no Idempotency-Key is sent

    class caller:
        namespace = None
        agent_id = None
        visibility = None

    def __init__(self) -> None:
        self.error: BaseException = RuntimeError("unset")

    def call(self, request: Any, caller: Any) -> Any:
        raise self.error


@pytest.fixture(scope="module")
def api() -> tuple[TestClient, _FailingHub, dict[str, Any]]:
    hub = _FailingHub()
    tools = tool_inputs(build_server(hub))  # type: ignore[arg-type]
    dashboard = Dashboard(hub, None, tools=tools)  # type: ignore[arg-type]
    app = Starlette(routes=dashboard.routes())
    app.add_exception_handler(404, dashboard.not_found)
    app.add_exception_handler(405, dashboard.not_found)
    client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
    return client, hub, openapi_document(tools)


def _kind_class(kind: str) -> type[FerrexError]:
    """A FerrexError subclass named ``kind`` (what the tool raising the code would be)."""
    return type(kind, (FerrexError,), {})


@pytest.mark.parametrize("code", sorted(ERRORS))
def test_the_api_answers_each_code_with_its_documented_status_and_body(
    api: tuple[TestClient, _FailingHub, dict[str, Any]], code: str
) -> None:
    client, hub, document = api
    documented = ERRORS[code]
    schema = document["components"]["schemas"]["ErrorBody"]
    assert code in schema["properties"]["code"]["enum"]
    assert documented.kind in schema["properties"]["kind"]["enum"]
    assert (
        f"| `{code}` | {documented.status} | {documented.kind} |"
        in (document["components"]["schemas"]["Error"]["description"])
    )
    # raised by another class than the table's (a hub rebuilds what an owner reported):
    # the body's kind is still the documented one
    hub.error = FerrexError("it failed", hint="do this", code=code, details={"ids": ["m1"]})
    for answer in (
        client.post("/api/v1/memories", json={"content": "Status check: a memory"}),
        client.get("/api/v1/stats"),
    ):
        assert answer.status_code == documented.status, (code, answer.text)
        error = answer.json()["error"]
        assert error == {"kind": documented.kind, "code": code, "message": "it failed",
                         "hint": "do this", "ids": ["m1"]}  # fmt: skip
        retry = answer.headers.get("retry-after")
        assert retry == (str(RETRY_AFTER_SECONDS) if documented.status in (429, 503) else None)


def test_an_unexpected_failure_is_internal_with_a_kind(
    api: tuple[TestClient, _FailingHub, dict[str, Any]],
) -> None:
    client, hub, _ = api
    hub.error = RuntimeError("boom")
    for answer in (
        client.post("/api/v1/memories", json={"content": "Status check: a memory"}),
        client.get("/api/v1/stats"),
    ):
        assert answer.status_code == 500, answer.text
        error = answer.json()["error"]
        assert (error["kind"], error["code"]) == ("FerrexError", "internal")
        assert "boom" not in answer.text
    missing = client.get("/api/v1/nothing")
    assert missing.status_code == 404
    assert missing.json()["error"]["kind"] == "Refused"
    wrong = client.put("/api/v1/memories", json={})
    assert wrong.status_code == 405
    assert wrong.json()["error"]["kind"] == "UsageError"


def test_each_operation_documents_the_statuses_of_its_codes(
    api: tuple[TestClient, _FailingHub, dict[str, Any]],
) -> None:
    _, _, document = api
    store = document["paths"]["/api/v1/memories"]["post"]["responses"]
    # a supersedes naming no memory is a 404; a secret 422; the embedding server's refusal 424
    assert "`not_found`" in store["404"]["description"]
    assert "`secret_refused`" in store["422"]["description"]
    assert "`model_mismatch`" in store["409"]["description"]
    assert "`model_unauthorized`" in store["424"]["description"]
    assert store["503"]["headers"]["Retry-After"]["schema"]["const"] == RETRY_AFTER_SECONDS
    assert "500" in store
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status == "200":
                    continue
                named = [c for c in ERRORS if f"`{c}`" in response["description"]]
                assert named, (path, method, status)
                assert all(ERRORS[c].status == int(status) for c in named), (path, method)


# -- one class per failure: no free-string codes, no class without its status ----------------

#: The ``code=`` arguments left in the source, each with why it is not a class: every other
#: failure is raised as the class of its code.
FREE_CODES = {
    ("ferrex/errors.py", "JournalFailure"): "a journal code newer than ferrex's classes, kept",
    ("ferrex/server/hub_peer.py", "cls"): "rebuilds the error another process reported by its "
    "kind and code (the code may be one this version does not know)",
    ("ferrex/hooks/lean.py", "FerrexError"): "the lean hook rebuilds an owner's error the "
    "same way, without importing the hub",
    ("ferrex/server/mcp_stdio.py", "ErrorData"): "MCP's JSON-RPC error, not a ferrex error",
}


def _calls() -> list[tuple[str, str, ast.Call]]:
    """Every call in the three packages: (file, the name called, the call)."""
    found = []
    for package in ("ferrex", "journal", "projections"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                    found.append((str(path.relative_to(ROOT)), name, node))
    return found


CALLS = _calls()


def _error_classes() -> dict[str, type[FerrexError]]:
    """Every FerrexError class ferrex makes, by name (the modules that make any imported)."""
    import ferrex.models.remote
    import ferrex.server.dashboard.api  # noqa: F401  (TooLarge)

    seen: dict[str, type[FerrexError]] = {}
    todo: list[type[FerrexError]] = [FerrexError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("ferrex."):
            seen[cls.__name__] = cls
        todo.extend(cls.__subclasses__())
    return seen


def test_no_error_is_raised_with_a_free_string_code() -> None:
    free = {(path, name) for path, name, call in CALLS
            if any(keyword.arg == "code" for keyword in call.keywords)}  # fmt: skip
    assert free == set(FREE_CODES), "raise the class of the code instead of code=..."


def test_every_error_class_raised_has_its_code_and_status() -> None:
    classes = _error_classes()
    raised = {name for _, name, _ in CALLS if name in classes}
    # the search finds raise sites for real: a family, a code's class, one without a code
    assert {"UsageError", "Duplicate", "SecretRefused", "NotFound", "ServerDown"} <= raised
    for name, cls in classes.items():
        owner = ERROR_CLASSES[cls.code]  # the class that declares its code
        assert issubclass(cls, owner), name
        assert owner.__module__ == "ferrex.errors", name  # all made before edge reads them
        assert ERRORS[cls.code] == ErrorStatus(owner.http_status, owner.kind, owner.meaning)
        assert cls.exit_code == owner.exit_code, name


def test_a_code_cannot_be_added_without_its_status_nor_twice() -> None:
    before = dict(ERROR_CLASSES)
    with pytest.raises(TypeError, match="without its http_status"):
        type("NoStatus", (UsageError,), {"code": "no_status_yet", "meaning": "m"})
    with pytest.raises(TypeError, match="already Duplicate's"):
        type("Again", (Refused,), {"code": "duplicate", "http_status": 409, "meaning": "m"})
    assert before == ERROR_CLASSES
    assert len({cls.code for cls in ERROR_CLASSES.values()}) == len(ERROR_CLASSES)


@pytest.mark.parametrize(
    ("cls", "code", "exit_code", "status", "kind"),
    [
        (Duplicate, "duplicate", 7, 409, "Refused"),
        (NotFound, "not_found", 7, 404, "Refused"),
        (SecretRefused, "secret_refused", 2, 422, "UsageError"),
        (ModelMismatch, "model_mismatch", 4, 409, "ModelUnavailable"),
        (ExportDiverged, "export_diverged", 3, 409, "JournalFailure"),
        (Internal, "internal", 1, 500, "FerrexError"),
        (UsageError, "invalid_input", 2, 400, "UsageError"),
    ],
)
def test_a_failure_class_carries_its_code_exit_code_status_and_kind(
    cls: type[FerrexError], code: str, exit_code: int, status: int, kind: str
) -> None:
    error = cls("it failed", hint="do this", details={"ids": ["m1"]})
    assert (error.code, error.exit_code, status_of(error.code)) == (code, exit_code, status)
    assert error_document(error) == {"kind": kind, "code": code, "message": "it failed",
                                     "hint": "do this", "ids": ["m1"]}  # fmt: skip
    again = error.reworded("in line 3: it failed")
    assert (type(again), again.code, again.hint, again.message) == (
        cls, code, "do this", "in line 3: it failed")  # fmt: skip


def test_a_class_without_a_code_of_its_own_keeps_its_name_as_kind() -> None:
    from ferrex.models.remote import ServerDown

    error = ServerDown("the embeddings server is down")
    assert (error.code, error.exit_code, error_document(error)["kind"]) == (
        "backend_unavailable", 5, "ServerDown")  # fmt: skip


def test_journal_errors_become_the_class_of_their_code() -> None:
    damaged = from_journal_error(JournalDamaged("bad record", segment=Path("s"), offset=3))
    assert type(damaged) is JournalDamagedFailure and damaged.code == "journal.damaged"
    assert status_of(damaged.code) == 409 and damaged.exit_code == 3
    unknown = JournalError("something new")
    unknown.code = "newer"
    kept = from_journal_error(unknown)
    assert (type(kept), kept.code) == (JournalFailure, "journal.newer")
