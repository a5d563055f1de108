"""The SDKs' types, generated from the schemas the server publishes: the components of its
OpenAPI document (the answers of :mod:`ferrex.server.dashboard.schemas`, the MCP tools' input
schemas) and the query parameters of ``GET /api/v1/memories``.

    python -m tools.sdk_types           rewrite the generated types
    python -m tools.sdk_types --check   exit 1 naming each file that is not up to date
                                        (--diff: and how it differs)

It writes ``sdk/python/ferrex_client/answers.py`` whole (TypedDicts of the answers) and the
part of ``sdk/typescript/ferrex-client.d.mts`` between its generated markers (the request
and answer types; the client's classes and options around it are written by hand).
``tests/unit/test_sdk_types.py`` runs the check, so a schema changed without this command
run (and its output committed) fails the suite.

The SDK keeps its own names for some components (:data:`SDK_NAMES`); the parts of answers
that :data:`~ferrex.server.dashboard.schemas.PARTS` names get a type of their own wherever
they appear. Objects stay open in TypeScript (an answer ``extends Answer``): a later server
may add fields.
"""

from __future__ import annotations

import json
import keyword
import subprocess
import sys
import sysconfig
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ferrex.server.caller import Caller
from ferrex.server.dashboard.openapi import openapi_document
from ferrex.server.dashboard.schemas import PARTS, for_generators
from ferrex.server.hub import Hub
from ferrex.server.mcp_server import build_server, tool_inputs
from tools import harness
from tools.harness import ROOT

TS_FILE = ROOT / "sdk" / "typescript" / "ferrex-client.d.mts"
PY_FILE = ROOT / "sdk" / "python" / "ferrex_client" / "answers.py"
BEGIN = "// <generated> by `python -m tools.sdk_types` from the server's schemas; edit those."
END = "// </generated>"
_WIDTH = 100

#: Components whose SDK name differs from the document's.
SDK_NAMES = {
    "StoreBatchAnswer": "BatchAnswer",
    "StoreBatchItem": "BatchItem",
    "MemoryHistory": "History",
    "ErrorBody": "ErrorDocument",
}
#: The answers both SDKs type, in the order they are written (components by document name).
ANSWERS = ("StoreAnswer", "StoreBatchItem", "StoreBatchAnswer", "RecallHit", "RecallAnswer",
           "ConfirmAnswer", "ForgetAnswer", "ListedMemory", "MemoryPage", "MemoryDetail",
           "MemoryVersion", "MemoryHistory", "EntityNames", "Entity", "Stats", "Reflect",
           "TagCounts", "ChangeEvent", "ErrorBody")  # fmt: skip


# The types, as both languages need them.


@dataclass(frozen=True)
class Prim:
    """string, number, integer, boolean, null, or unknown (any JSON value)."""

    name: str


@dataclass(frozen=True)
class Named:
    name: str


@dataclass(frozen=True)
class Enum:
    values: tuple[str, ...]


@dataclass(frozen=True)
class Array:
    item: Type


@dataclass(frozen=True)
class Map:
    value: Type


@dataclass(frozen=True)
class Union:
    members: tuple[Type, ...]


@dataclass(frozen=True)
class Field:
    name: str
    type: Type
    required: bool
    description: str


@dataclass(frozen=True)
class Obj:
    """An object with properties; ``name`` the one a language that needs one gives it;
    ``extra`` the type of the fields it does not name (None: it names them all)."""

    name: str
    fields: tuple[Field, ...]
    extra: Type | None
    description: str


Type = Prim | Named | Enum | Array | Map | Union | Obj


def _camel(text: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in text.split("_"))


class Reader:
    """Turns the published JSON Schemas into :data:`Type` values."""

    def __init__(self) -> None:
        self.parts = [(name, for_generators(schema)) for name, schema in PARTS.items()]

    def part(self, schema: Mapping[str, Any]) -> str | None:
        """The name :data:`PARTS` gives ``schema``: an enum by its values, anything else
        when equal to it (its own description aside)."""
        bare = {k: v for k, v in schema.items() if k != "description"}
        for name, part in self.parts:
            if "enum" in part:
                if "enum" in schema and list(schema["enum"]) == list(part["enum"]):
                    return name
            elif bare == {k: v for k, v in part.items() if k != "description"}:
                return name
        return None

    def read(self, schema: Mapping[str, Any], hint: str, *, named: bool = True) -> Type:
        """``schema`` as a type; ``hint`` names an object a language must name."""
        if "$ref" in schema:
            component = str(schema["$ref"]).rpartition("/")[2]
            return Named(SDK_NAMES.get(component, component))
        found = self.part(schema) if named else None
        if found is not None:
            return Named(found)
        if "enum" in schema:
            return Enum(tuple(str(v) for v in schema["enum"]))
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return Union(tuple(self.read(s, f"{hint}{i}") for i, s in enumerate(schema[key])))
        kinds = schema.get("type")
        if isinstance(kinds, list):
            return Union(tuple(self.read({**schema, "type": k}, hint) for k in kinds))
        if kinds == "array":
            return Array(self.read(schema.get("items", {}), hint + "Item"))
        if kinds == "object" or "properties" in schema:
            return self._object(schema, hint)
        if kinds in ("string", "number", "integer", "boolean", "null"):
            return Prim(str(kinds))
        return Prim("unknown")

    def _object(self, schema: Mapping[str, Any], hint: str) -> Type:
        extra_schema = schema.get("additionalProperties", True)
        extra: Type | None = None
        if isinstance(extra_schema, dict):
            extra = self.read(extra_schema, hint + "Value")
        elif extra_schema is True:
            extra = Prim("unknown")
        properties: dict[str, Any] = schema.get("properties", {})
        if not properties:
            return Map(extra or Prim("unknown"))
        required = set(schema.get("required", ()))
        fields = tuple(
            Field(name, self.read(prop, hint + _camel(name)), name in required,
                  str(prop.get("description", "")))
            for name, prop in properties.items()
        )  # fmt: skip
        return Obj(hint, fields, extra, str(schema.get("description", "")))


@dataclass(frozen=True)
class Definition:
    """One named type of an SDK: its name and what it is."""

    name: str
    type: Type
    doc: str = ""


def published() -> dict[str, Any]:
    """The OpenAPI document as a server with the default settings serves it (built over a
    hub that is never started: building the tools opens nothing)."""

    def closed() -> Any:
        raise RuntimeError("the SDK types are read from the schemas; nothing is opened")

    hub = Hub(Path("/nonexistent/ferrex-sdk-types"), closed, Caller())
    return openapi_document(tool_inputs(build_server(hub)))


def definitions(document: Mapping[str, Any]) -> tuple[list[Definition], list[Definition]]:
    """The shared parts and answers, and the requests (TypeScript's only), as types."""
    reader = Reader()
    components: dict[str, Any] = document["components"]["schemas"]
    shared = [
        Definition(name, reader.read(for_generators(schema), name, named=False))
        for name, schema in PARTS.items()
    ]
    for component in ANSWERS:
        name = SDK_NAMES.get(component, component)
        shared.append(Definition(name, reader.read(components[component], name, named=False)))
    recall = dict(components["RecallArguments"])
    recall["properties"] = {k: v for k, v in recall["properties"].items() if k != "query"}
    recall["required"] = [k for k in recall.get("required", ()) if k != "query"]
    listing = document["paths"]["/api/v1/memories"]["get"]["parameters"]
    list_options = {
        "type": "object",
        "additionalProperties": False,
        "properties": {p["name"]: {**p["schema"], "description": p["description"]}
                       for p in listing},
    }  # fmt: skip
    requests = [
        Definition("StoreArguments", reader.read(components["StoreArguments"], "StoreArguments",
                                                  named=False),
                   "The store tool's arguments."),
        Definition("RecallOptions", reader.read(recall, "RecallOptions", named=False),
                   "The recall tool's arguments besides the query."),
        Definition("ListOptions", reader.read(list_options, "ListOptions", named=False),
                   "The query of GET /api/v1/memories (a page of memories)."),
    ]  # fmt: skip
    return shared, requests


# TypeScript.


def _ts_doc(text: str, indent: str) -> list[str]:
    if not text:
        return []
    width = _WIDTH - len(indent) - 3
    lines = [w for para in text.splitlines() for w in textwrap.wrap(para, width) or [""]]
    if len(lines) == 1 and len(lines[0]) + len(indent) + 7 <= _WIDTH:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {line}".rstrip() for line in lines), f"{indent} */"]


def _ts(kind: Type, indent: str = "") -> str:
    if isinstance(kind, Prim):
        return {"integer": "number", "unknown": "unknown"}.get(kind.name, kind.name)
    if isinstance(kind, Named):
        return kind.name
    if isinstance(kind, Enum):
        return " | ".join(json.dumps(v) for v in kind.values)
    if isinstance(kind, Array):
        item = _ts(kind.item, indent)
        simple = isinstance(kind.item, Prim | Named)
        return f"{item}[]" if simple else f"Array<{item}>"
    if isinstance(kind, Map):
        return f"Record<string, {_ts(kind.value, indent)}>"
    if isinstance(kind, Union):
        return " | ".join(_ts(m, indent) for m in kind.members)
    inner = [f"{_ts_field(f)}" for f in kind.fields]
    one_line = "{ " + "; ".join(inner) + " }"
    if len(one_line) + len(indent) + 40 <= _WIDTH and not any(f.description for f in kind.fields):
        return one_line
    body = _ts_fields(kind.fields, indent + "  ")
    return "{\n" + "\n".join(body) + f"\n{indent}}}"


def _ts_field(field: Field, indent: str = "") -> str:
    mark = "" if field.required else "?"
    return f"{field.name}{mark}: {_ts(field.type, indent)}"


def _ts_fields(fields: tuple[Field, ...], indent: str) -> list[str]:
    lines: list[str] = []
    for field in fields:
        lines += _ts_doc(field.description, indent)
        lines += _ts_wrapped(f"{indent}{_ts_field(field, indent)};", indent)
    return lines


def _ts_wrapped(line: str, indent: str) -> list[str]:
    """A line too long for the width, its union's members one a line."""
    if len(line) <= _WIDTH or " | " not in line or "\n" in line:
        return [line]
    sign = " =" if line.lstrip().startswith("export type ") else ":"
    head, _, rest = line.partition(sign + " ")
    members = rest.rstrip(";").split(" | ")
    return [head + sign, *(f"{indent}  | {m}" for m in members[:-1]), f"{indent}  | {members[-1]};"]


def typescript(shared: list[Definition], requests: list[Definition]) -> str:
    """The generated part of the TypeScript declarations (between its markers)."""
    lines = [BEGIN, "", "/** Any answer's other fields (a later server may add some). */",
             "export type Answer = Record<string, unknown>;"]  # fmt: skip
    for definition in [*requests, *shared]:
        kind = definition.type
        lines.append("")
        if isinstance(kind, Obj):
            lines += _ts_doc(definition.doc or kind.description, "")
            answer = kind.extra is not None and definition not in requests
            extends = " extends Answer" if answer else ""
            lines.append(f"export interface {definition.name}{extends} {{")
            lines += _ts_fields(kind.fields, "  ")
            if kind.extra is not None and kind.extra != Prim("unknown"):
                lines.append(f"  [key: string]: {_ts(kind.extra)};")
            lines.append("}")
        else:
            lines += _ts_doc(definition.doc, "")
            lines += _ts_wrapped(f"export type {definition.name} = {_ts(kind)};", "")
    lines += ["", END]
    return "\n".join(lines)


def typescript_file(current: str, generated: str) -> str:
    """``current`` with the part between its markers replaced by ``generated``."""
    head, begin, rest = current.partition(BEGIN)
    _, end, tail = rest.partition(END)
    if not begin or not end:
        raise SystemExit(f"{TS_FILE.relative_to(ROOT)} has no {BEGIN!r} ... {END!r} markers")
    return head + generated + tail


# Python.

_PY_HEAD = '''\
"""The answers of ferrex's HTTP API as typed dictionaries (what ``/api/v1/openapi.json``
describes): the fields every answer of a kind has, and the optional ones as ``NotRequired``.
A server may add fields; they are there at run time, untyped.

Generated by ``python -m tools.sdk_types`` from the server's schemas: edit those, not this file.
"""

from __future__ import annotations

'''


class _Python:
    """Writes the TypedDicts, each object a language must name before what uses it."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.written: dict[str, Obj] = {}
        self.used: set[str] = set()

    def type(self, kind: Type) -> str:
        if isinstance(kind, Prim):
            if kind.name == "unknown":
                self.used.add("Any")
                return "Any"
            return {"string": "str", "number": "float", "integer": "int", "boolean": "bool",
                    "null": "None"}[kind.name]  # fmt: skip
        if isinstance(kind, Named):
            return kind.name
        if isinstance(kind, Enum):
            self.used.add("Literal")
            return "Literal[" + ", ".join(json.dumps(v) for v in kind.values) + "]"
        if isinstance(kind, Array):
            return f"list[{self.type(kind.item)}]"
        if isinstance(kind, Map):
            return f"dict[str, {self.type(kind.value)}]"
        if isinstance(kind, Union):
            return " | ".join(self.type(m) for m in kind.members)
        self.typed_dict(kind.name, kind, "")
        return kind.name

    def typed_dict(self, name: str, kind: Obj, doc: str) -> None:
        if name in self.written:
            if self.written[name] != kind:
                raise SystemExit(f"two different objects would be named {name}")
            return
        self.written[name] = kind
        self.used.add("TypedDict")
        body: list[str] = []
        text = doc or kind.description
        if text:
            wrapped = textwrap.wrap(text.replace('"', "'"), _WIDTH - 10)
            body += [f'    """{wrapped[0]}', *(f"    {line}" for line in wrapped[1:])]
            body[-1] += '"""'
            body.append("")
        for field in kind.fields:
            if not field.name.isidentifier() or keyword.iskeyword(field.name):
                raise SystemExit(f"{name}.{field.name} cannot be a TypedDict field")
            shown = self.type(field.type)
            if not field.required:
                self.used.add("NotRequired")
                shown = f"NotRequired[{shown}]"
            for line in textwrap.wrap(field.description, _WIDTH - 7):
                body.append(f"    #: {line}")
            body.append(f"    {field.name}: {shown}")
        self.blocks.append(f"class {name}(TypedDict):\n" + "\n".join(body))

    def alias(self, name: str, kind: Type) -> None:
        self.blocks.append(f"{name} = {self.type(kind)}")


def python(shared: list[Definition]) -> str:
    """The whole of the Python SDK's ``answers.py`` (formatted as ``ruff format`` does)."""
    writer = _Python()
    for definition in shared:
        if isinstance(definition.type, Obj):
            writer.typed_dict(definition.name, definition.type, definition.doc)
        else:
            writer.alias(definition.name, definition.type)
    names = sorted(writer.used)
    aliases = [b for b in writer.blocks if not b.startswith("class ")]
    classes = [b for b in writer.blocks if b.startswith("class ")]
    text = (_PY_HEAD + f"from typing import {', '.join(names)}\n\n" + "\n".join(aliases)
            + "\n\n\n" + "\n\n\n".join(classes))  # fmt: skip
    return _ruff_format(text + "\n")


def _ruff_format(text: str) -> str:
    """``text`` as ``ruff format`` (the venv's, pinned by the constraints) writes it."""
    ruff = Path(sysconfig.get_path("scripts")) / "ruff"
    done = subprocess.run(
        [str(ruff) if ruff.exists() else "ruff", "format", "--stdin-filename", str(PY_FILE), "-"],
        input=text, capture_output=True, text=True, check=True, cwd=ROOT,
    )  # fmt: skip
    return done.stdout


# The files.


def expected() -> dict[Path, str]:
    shared, requests = definitions(published())
    current = TS_FILE.read_text(encoding="utf-8")
    return {
        TS_FILE: typescript_file(current, typescript(shared, requests)),
        PY_FILE: python(shared),
    }


def main(argv: list[str] | None = None) -> int:
    return harness.write_or_check(argv, __doc__.splitlines()[0], expected, "tools.sdk_types")


if __name__ == "__main__":
    sys.exit(main())
