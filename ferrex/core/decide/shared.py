"""What the families of decisions share: the :class:`Measures` a store may ask of its
caller, the store's scope
(:class:`Who`), the memory body a store makes, the checks of ids and of an explicit
supersede (a store's ``supersedes``, a confirm's), and the shape of the simple answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, Protocol, TypedDict

from ferrex.errors import AlreadySuperseded, NotFound, UsageError
from ferrex.ids import plausible_id
from ferrex.rules.lifecycle import expired
from ferrex.rules.memory_input import ValidStore
from ferrex.rules.visibility import all_readers_see, may_change, scope_of, sees
from journal import MemoryBody
from projections.readmodel.predicates import is_current
from projections.rows import Memory

from ..view import View


class FlaggedFact(TypedDict):
    """A :class:`Flagged` fact as the store's answer names it."""

    id: str
    fact: str
    reason: str


@dataclass(frozen=True)
class Flagged:
    """A current fact a store kept beside the new one, flagged as a possible conflict."""

    id: str
    fact: str
    reason: str

    def as_dict(self) -> FlaggedFact:
        return {"id": self.id, "fact": self.fact, "reason": self.reason}


class Answered(Protocol):
    """A simple result (forget, validate, mark, an entity correction): its fields are the
    answer, with the warnings the runner added."""

    @property
    def warnings(self) -> tuple[str, ...]: ...


def answer_doc(result: Answered) -> dict[str, Any]:
    """A result as the tools answer it: every field, lists for tuples, warnings only when
    there are some."""
    doc: dict[str, Any] = {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in vars(result).items()
        if name != "warnings"
    }
    if result.warnings:
        doc["warnings"] = list(result.warnings)
    return doc


class Measures(Protocol):
    """What a store's decision asks its caller to measure, at the moment it needs it:
    cosines of short texts (entity names, objects, predicate phrases) and the nearest
    memories by dense vector. Injected like the clock and the ids, so the decision stays
    pure: the writer answers with the embedding model and Qdrant and remembers each answer
    (:class:`ferrex.write.measures.StoreMeasures`); a unit test answers from a table."""

    def cosines(self, pairs: Sequence[tuple[str, str]]) -> Sequence[float]:
        """The cosine similarity of each pair of texts, in the order given."""
        ...

    def neighbours(self) -> Sequence[tuple[str, float]]:
        """(memory id, dense cosine to the new memory's text) for the nearest memories of
        its namespace and type, committed or pending in the batch, in any order."""
        ...


def cosines_with(measures: Measures, text: str, others: Sequence[str]) -> list[float]:
    """The cosine of ``text`` with each of ``others``; a text is 1 with itself, unasked."""
    asked = [(text, other) for other in others if other != text]
    answers = iter(measures.cosines(asked) if asked else ())
    return [1.0 if other == text else next(answers) for other in others]


@dataclass(frozen=True)
class Who:
    """Whose a store is: its namespace, its agent (None: the operator) and its visibility;
    what that scope may see and change (:mod:`ferrex.rules.visibility`)."""

    namespace: str
    agent_id: str | None
    visibility: Literal["private", "shared"]

    @property
    def scope(self) -> str | None:
        return scope_of(self.agent_id, self.visibility)

    def sees(self, memory: Memory) -> bool:
        return sees(self.agent_id, memory.agent_id, memory.visibility)

    def may_change(self, memory: Memory) -> bool:
        return may_change(self.agent_id, self.visibility, memory.agent_id, memory.visibility)

    def all_readers_see(self, memory: Memory) -> bool:
        """Whether everyone who will see the new memory sees ``memory`` too."""
        return all_readers_see(self.agent_id, self.visibility, memory.agent_id, memory.visibility)


def supersedable(memory_id: str, namespace: str, view: View, who: Who, now: datetime) -> Memory:
    old = view.memory(memory_id)
    if old is None or not who.sees(old) or expired(old.expires_at, now.timestamp()):
        raise NotFound(
            f"cannot supersede {memory_id}: no such memory",
            hint="check the id (recall shows ids); it may have been forgotten",
            details={"ids": [memory_id]},
        )
    if old.namespace != namespace:
        raise UsageError(
            f"cannot supersede {memory_id}: it is in namespace {old.namespace!r}, "
            f"not {namespace!r}",
            hint="store the replacement in the same namespace",
        )
    if not who.may_change(old):
        raise UsageError(
            f"cannot supersede {memory_id} with a private memory: it is shared, and a "
            "private memory never changes what other agents see",
            hint='store the replacement with visibility "shared"',
        )
    if not is_current(old):
        raise AlreadySuperseded(
            f"{memory_id} is already superseded by {old.superseded_by}",
            hint=f"supersede the current version, {old.superseded_by}, instead",
            details={"ids": [memory_id], "superseded_by": old.superseded_by},
        )
    return old


def body_of(valid: ValidStore) -> MemoryBody:
    return MemoryBody(
        content=valid.content,
        subject=valid.subject,
        predicate=valid.predicate,
        object=valid.object,
        procedure_name=valid.name,
        conditions=valid.conditions,
        steps=valid.steps,
        source=valid.source,
        context=valid.context,
        import_key=valid.import_key,
    )


def checked_ids(ids: Sequence[str]) -> list[str]:
    """Memory ids as given, checked for shape, without repeats (a usage error otherwise)."""
    if isinstance(ids, str) or not ids:
        raise UsageError("give at least one memory id", hint="recall shows memory ids")
    bad = [repr(i) for i in ids if not plausible_id(i)]
    if bad:
        raise UsageError(
            f"not a memory id: {', '.join(bad[:5])}",
            hint="ids are printable, without spaces, at most 64 characters",
        )
    return list(dict.fromkeys(ids))
