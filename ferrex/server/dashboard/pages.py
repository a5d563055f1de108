"""The dashboard's HTML: one function per page, from the JSON documents the API serves.

Pure rendering (no I/O): every value is escaped, nothing is loaded from elsewhere (inline CSS,
inline SVG, no script), so a page works offline and the Content-Security-Policy can forbid
everything but inline style. Fields a document may or may not carry (``pinned``,
``importance``, ``expires``, …) are shown when present, generically.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from ferrex.rules.arguments import STRATEGIES
from ferrex.rules.memory_input import MEMORY_TYPES

#: The per-hit scores drawn as bars: explain key → label.
SIGNALS = (
    ("dense", "dense"),
    ("bm25", "BM25"),
    ("context", "context"),
    ("boost", "recency"),
    ("rerank", "rerank"),
)
#: Fields of a memory shown when a document carries them (later features add them).
OPTIONAL_FIELDS = ("pinned", "importance", "expires", "expires_at", "ttl")

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:.5em 1em;display:flex;gap:1.2em;align-items:center}
header a{color:#cfe0ff;text-decoration:none}header a.on{color:#fff;font-weight:600}
header .who{margin-left:auto;color:#aab}main{padding:1em;max-width:1100px}
a{color:#1f5fbf}h1{font-size:1.3em;margin:.2em 0 .6em}h2{font-size:1.1em;margin:1.2em 0 .4em}
form.search{display:flex;flex-wrap:wrap;gap:.5em 1em;align-items:end;background:#fff;
padding:.8em;border:1px solid #dde}
form.search label{display:flex;flex-direction:column;font-size:.85em;color:#556}
input[type=text],input[type=search],input[type=number],select{font:inherit;padding:.25em}
.hit{background:#fff;border:1px solid #dde;margin:.6em 0;padding:.6em .8em}
.hit .meta,.small{color:#667;font-size:.85em}.tag{display:inline-block;padding:0 .4em;
border-radius:3px;background:#e8ecf3;margin-right:.3em;font-size:.85em}
.fresh{background:#d9f2dd}.aging{background:#fbefc9}.stale{background:#f8d7d3}
.superseded{background:#e0e0e0}.bars{display:grid;grid-template-columns:5em 1fr 5em;
gap:1px .5em;max-width:420px;font-size:.8em;margin-top:.4em}.bar{background:#e8ecf3;height:.8em;
margin-top:.25em}.bar i{display:block;height:100%;background:#4a7bd0}
table{border-collapse:collapse;background:#fff}td,th{border:1px solid #dde;padding:.25em .5em;
text-align:left;vertical-align:top}th{background:#eef1f6}.err{background:#f8d7d3;padding:.6em;
border:1px solid #e3a7a0}.ok{color:#1b7a2a}.bad{color:#b02a1c}
button{font:inherit;padding:.2em .7em;cursor:pointer}form.inline{display:inline}
pre{white-space:pre-wrap;background:#fff;border:1px solid #dde;padding:.5em}
"""

_NAV = (
    ("/", "search", "Search"),
    ("/entities", "entities", "Entities"),
    ("/health", "health", "Health"),
    ("/journal", "journal", "Journal"),
)


def e(value: object) -> str:
    return escape("" if value is None else str(value), quote=True)


def layout(title: str, page: str, who: str, body: str) -> str:
    nav = "".join(
        f'<a href="{href}"{" class=on" if key == page else ""}>{label}</a>'
        for href, key, label in _NAV
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{e(title)} · ferrex</title><style>{_CSS}</style></head><body>"
        f'<header><b>ferrex</b>{nav}<span class="who" id="who">{e(who)}</span></header>'
        f"<main>{body}</main></body></html>"
    )


def error_box(error: Mapping[str, Any]) -> str:
    hint = f"<div class=small>{e(error.get('hint'))}</div>" if error.get("hint") else ""
    return (
        f'<div class="err" id="error"><b>[{e(error.get("code"))}]</b> '
        f"{e(error.get('message'))}{hint}</div>"
    )


def memory_link(memory_id: str, text: str | None = None) -> str:
    return f'<a class="mem" href="/memory/{quote(memory_id, safe="")}">{e(text or memory_id)}</a>'


def entity_link(name: str) -> str:
    return f'<a class="ent" href="/entities?{urlencode({"name": name})}">{e(name)}</a>'


def _label(label: object) -> str:
    return f'<span class="tag {e(label)}">{e(label)}</span>'


def _optional(doc: Mapping[str, Any]) -> str:
    shown = [
        f'<span class="tag opt">{e(k)}: {e(doc[k])}</span>'
        for k in OPTIONAL_FIELDS
        if doc.get(k) not in (None, False)
    ]
    return "".join(shown)


# -- search ----------------------------------------------------------------------------------


def search_page(
    params: Mapping[str, Any],
    doc: Mapping[str, Any] | None,
    error: Mapping[str, Any] | None,
    who: str,
) -> str:
    body = ["<h1>Search</h1>", _search_form(params)]
    if error is not None:
        body.append(error_box(error))
    if doc is not None:
        body.append(_results(doc))
    return layout("Search", "search", who, "".join(body))


def _search_form(p: Mapping[str, Any]) -> str:
    types = set(p.get("types") or ())
    boxes = "".join(
        f'<label><span><input type="checkbox" name="types" value="{t}"'
        f"{' checked' if t in types else ''}> {t}</span></label>"
        for t in MEMORY_TYPES
    )
    strategy = p.get("strategy") or "balanced"
    options = "".join(
        f"<option{' selected' if s == strategy else ''}>{s}</option>" for s in STRATEGIES
    )

    def text(name: str, label: str, size: int = 14, kind: str = "text") -> str:
        return (
            f'<label>{label}<input type="{kind}" name="{name}" id="f-{name}" '
            f'size="{size}" value="{e(p.get(name, ""))}"></label>'
        )

    def flag(name: str, label: str) -> str:
        checked = " checked" if p.get(name) else ""
        return (
            f'<label><span><input type="checkbox" name="{name}" value="1"{checked}> '
            f"{label}</span></label>"
        )

    entities = p.get("entities") or ()
    return (
        '<form class="search" method="get" action="/">'
        f'<label>Query<input type="search" name="q" id="q" size="40" autofocus '
        f'value="{e(p.get("q", ""))}"></label>{boxes}'
        f'<label>Entities<input type="text" name="entities" size="16" '
        f'value="{e(", ".join(entities))}"></label>'
        f'<label>Strategy<select name="strategy">{options}</select></label>'
        + text("limit", "Limit", 3, "number")
        + text("as_of", "As of")
        + text("after", "After")
        + text("before", "Before")
        + text("min_relevance", "Min relevance", 4)
        + text("namespace", "Namespace", 10)
        + flag("include_stale", "stale too")
        + flag("include_invalidated", "superseded too")
        + '<button type="submit" id="go">Search</button></form>'
    )


def _results(doc: Mapping[str, Any]) -> str:
    results: Sequence[Mapping[str, Any]] = doc.get("results", [])
    out = [
        f'<p class=small id="summary">{len(results)} result'
        f"{'' if len(results) == 1 else 's'} in namespace {e(doc.get('namespace'))}"
    ]
    hidden = doc.get("hidden")
    if hidden:
        out.append(f" · hidden: {e(', '.join(f'{k} {v}' for k, v in hidden.items() if v))}")
    if doc.get("unknown_entities"):
        out.append(f" · unknown entities: {e(', '.join(doc['unknown_entities']))}")
    out.append("</p>")
    if doc.get("note"):
        out.append(f"<p class=small>{e(doc['note'])}</p>")
    top = _signal_tops(results)
    for r in results:
        out.append(_hit(r, top))
    return "".join(out)


def _signal_tops(results: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The largest value of each signal in the result set: bars are drawn relative to it."""
    tops: dict[str, float] = {}
    for key, _ in SIGNALS:
        values = [_number((r.get("explain") or {}).get(key)) for r in results]
        tops[key] = max((v for v in values if v is not None), default=0.0)
    return tops


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _hit(r: Mapping[str, Any], top: Mapping[str, float]) -> str:
    fresh = (r.get("freshness") or {}).get("label")
    entities = " ".join(entity_link(n) for n in r.get("entities", []))
    meta = (
        f"{e(r.get('type'))} · {_label(fresh)} · relevance {e(r.get('relevance_label'))} "
        f"({e(r.get('relevance'))}) · score {e(r.get('score'))} · {e(r.get('event_time'))}"
    )
    return (
        f'<div class="hit" data-id="{e(r.get("id"))}">'
        f"<div>{memory_link(str(r.get('id')), _hit_text(r))}</div>"
        f'<div class="meta">{meta} {_optional(r)}</div>'
        f'<div class="meta">{entities}</div>{_bars(r.get("explain") or {}, top)}</div>'
    )


def _hit_text(r: Mapping[str, Any]) -> str:
    if r.get("type") == "semantic":
        return " ".join(str(r.get(k) or "") for k in ("subject", "predicate", "object")).strip()
    if r.get("type") == "procedural":
        return f"{r.get('name')} v{r.get('version')}: " + "; ".join(r.get("steps") or [])
    return str(r.get("content") or r.get("summary") or r.get("id"))


def _bars(explain: Mapping[str, Any], top: Mapping[str, float]) -> str:
    if not explain:
        return ""
    rows = []
    for key, label in SIGNALS:
        value = _number(explain.get(key))
        width = 0.0 if value is None or top[key] <= 0 else max(0.0, value / top[key]) * 100
        shown = "-" if value is None else f"{value:.3f}"
        rows.append(
            f'<span>{label}</span><div class="bar" title="{label}"><i style="width:{width:.0f}%">'
            f'</i></div><span class="sig-{key}">{shown}</span>'
        )
    return f'<div class="bars">{"".join(rows)}</div>'


# -- memory ----------------------------------------------------------------------------------


def memory_page(doc: Mapping[str, Any], history: Mapping[str, Any], who: str, can_act: bool) -> str:
    body = doc.get("body") or {}
    rows = "".join(
        f"<tr><th>{e(k)}</th><td>{e('; '.join(v) if isinstance(v, list) else v)}</td></tr>"
        for k, v in body.items()
    )
    facts = [
        ("id", doc.get("id")),
        ("type", doc.get("type")),
        ("namespace", doc.get("namespace")),
        ("visibility", doc.get("visibility")),
        ("event time (t_valid)", doc.get("event_time")),
        ("stored", doc.get("created_at")),
        ("confidence", doc.get("confidence")),
        ("recalled", doc.get("access_count")),
        ("last recalled", doc.get("last_accessed")),
        ("last confirmed", doc.get("last_validated")),
    ]
    facts += [(k, doc[k]) for k in OPTIONAL_FIELDS if k in doc]
    info = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in facts)
    entities = " ".join(entity_link(n) for n in doc.get("entities", [])) or "none"
    actions = _actions([str(doc.get("id"))]) if can_act else ""
    versions: Sequence[Mapping[str, Any]] = history.get("versions", [])
    return layout(
        "Memory",
        "search",
        who,
        f'<h1 id="summary-title">{e(doc.get("summary"))}</h1>'
        f'<table id="body">{rows}</table><h2>Entities</h2><p id="entities">{entities}</p>'
        f'<h2>Details</h2><table id="details">{info}</table>{actions}'
        f'<h2 id="history">History</h2>{timeline(versions)}{_versions_table(versions)}',
    )


def _actions(ids: Sequence[str]) -> str:
    hidden = "".join(f'<input type="hidden" name="ids" value="{e(i)}">' for i in ids)
    return (
        f'<p><form class="inline" method="post" action="/actions/confirm">{hidden}'
        '<button class="confirm">Confirm (validate)</button></form> '
        f'<form class="inline" method="post" action="/actions/forget">{hidden}'
        '<button class="forget">Forget…</button></form></p>'
    )


def _versions_table(versions: Sequence[Mapping[str, Any]]) -> str:
    head = (
        "<tr><th>version</th><th>t_valid</th><th>t_invalid</th><th>stored</th>"
        "<th>recalled</th><th>last recalled</th><th>last confirmed</th></tr>"
    )
    rows = []
    for v in versions:
        mark = " (this)" if v.get("current") else ""
        rows.append(
            f'<tr class="version"><td>{memory_link(str(v["id"]), v.get("summary"))}{mark}</td>'
            f"<td>{e(v.get('t_valid'))}</td><td>{e(v.get('t_invalid') or 'still valid')}</td>"
            f"<td>{e(v.get('created_at'))}</td><td>{e(v.get('access_count'))}</td>"
            f"<td>{e(v.get('last_accessed'))}</td><td>{e(v.get('last_validated'))}</td></tr>"
        )
    return f'<table id="versions">{head}{"".join(rows)}</table>'


def _epoch(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def timeline(versions: Sequence[Mapping[str, Any]], now: float | None = None) -> str:
    """The supersede chain as inline SVG: one bar per version from t_valid to t_invalid (or
    now), a dot where it was confirmed or last recalled."""
    spans = [(v, _epoch(v.get("t_valid")), _epoch(v.get("t_invalid"))) for v in versions]
    starts = [s for _, s, _ in spans if s is not None]
    if not starts:
        return ""
    end_now = now if now is not None else datetime.now(UTC).timestamp()
    lo = min(starts)
    hi = max([end_now, *(t for _, _, t in spans if t is not None)])
    width, left, row = 760, 10, 26
    scale = (width - 2 * left) / max(hi - lo, 1.0)
    parts = []
    for i, (v, start, stop) in enumerate(spans):
        if start is None:
            continue
        x0 = left + (start - lo) * scale
        x1 = left + ((stop if stop is not None else end_now) - lo) * scale
        y = 8 + i * row
        colour = "#4a7bd0" if stop is None else "#a9b4c6"
        parts.append(
            f'<rect class="span" x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 3):.1f}" height="14" '
            f'fill="{colour}"><title>{e(v.get("summary"))}: {e(v.get("t_valid"))} → '
            f"{e(v.get('t_invalid') or 'now')}</title></rect>"
            f'<text x="{x0 + 4:.1f}" y="{y + 11}" font-size="10" fill="#fff">'
            f"{e(str(v.get('summary', ''))[:60])}</text>"
        )
        for key, fill in (("last_validated", "#1b7a2a"), ("last_accessed", "#e09b00")):
            t = _epoch(v.get(key))
            if t is not None:
                cx = left + (min(t, hi) - lo) * scale
                parts.append(
                    f'<circle cx="{cx:.1f}" cy="{y + 7}" r="4" fill="{fill}">'
                    f"<title>{key}: {e(v.get(key))}</title></circle>"
                )
    height = 16 + len(spans) * row
    labels = (
        f'<text x="{left}" y="{height - 2}" font-size="10">{e(_day(lo))}</text>'
        f'<text x="{width - left}" y="{height - 2}" font-size="10" text-anchor="end">'
        f"{e(_day(hi))}</text>"
    )
    return (
        f'<svg id="timeline" width="{width}" height="{height + 4}" role="img" '
        f'aria-label="validity timeline" style="background:#fff;border:1px solid #dde">'
        f"{''.join(parts)}{labels}</svg>"
        "<p class=small>bars: when each version held (t_valid → t_invalid); "
        '<span style="color:#1b7a2a">●</span> last confirmed, '
        '<span style="color:#e09b00">●</span> last recalled</p>'
    )


def _day(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M")


# -- entities ---------------------------------------------------------------------------------


def entities_page(
    listing: Mapping[str, Any] | None,
    entity: Mapping[str, Any] | None,
    error: Mapping[str, Any] | None,
    name: str,
    who: str,
) -> str:
    form = (
        '<form class="search" method="get" action="/entities"><label>Entity (any spelling)'
        f'<input type="search" name="name" id="name" value="{e(name)}"></label>'
        '<button type="submit">Show</button></form>'
    )
    body = ["<h1>Entities</h1>", form]
    if error is not None:
        body.append(error_box(error))
    if entity is not None:
        body.append(_entity(entity))
    if listing is not None:
        names = " · ".join(entity_link(n) for n in listing.get("names", []))
        body.append(
            f"<h2>Names you can see ({e(listing.get('total'))})</h2>"
            f'<p id="names">{names or "none yet"}</p>'
        )
        offset, shown = int(listing.get("offset", 0)), len(listing.get("names", []))
        if offset + shown < int(listing.get("total", 0)):
            nxt = urlencode({"offset": offset + shown, "prefix": listing.get("prefix", "")})
            body.append(f'<p><a href="/entities?{nxt}">more…</a></p>')
    return layout("Entities", "entities", who, "".join(body))


def _entity(doc: Mapping[str, Any]) -> str:
    aliases = "".join(
        f"<tr><td>{e(a['alias'])}</td><td>{e(a['match'])}</td><td>{e(a['score'])}</td></tr>"
        for a in doc.get("aliases", [])
    )
    memories = "".join(
        f"<li>{memory_link(m['id'], m['summary'])} <span class=small>{e(m['type'])} · "
        f"{e(m['event_time'])}{' · superseded' if m.get('t_invalid') else ''}</span></li>"
        for m in doc.get("memories", [])
    )
    more = ""
    if doc.get("more"):
        nxt = urlencode({"name": doc["name"], "offset": int(doc.get("offset", 0)) + 25})
        more = f'<p><a href="/entities?{nxt}">older memories…</a></p>'
    return (
        f'<h2 id="entity-name">{e(doc.get("name"))}</h2>'
        "<table id=aliases><tr><th>spelling</th><th>matched by</th><th>score</th></tr>"
        f"{aliases}</table><h2>Entities that co-occur</h2>"
        f"{graph(doc.get('name', ''), doc.get('graph') or {})}"
        f'<h2>Memories</h2><ul id="entity-memories">{memories}</ul>{more}'
    )


def graph(centre: str, doc: Mapping[str, Any]) -> str:
    """The co-occurrence graph as inline SVG: the entity in the middle, those that share
    memories with it around, line width by how many they share."""
    nodes: Sequence[Mapping[str, Any]] = doc.get("nodes", [])
    if not nodes:
        return "<p class=small>No other entity shares a memory with this one.</p>"
    size, r = 520, 190
    cx = cy = size / 2
    where: dict[str, tuple[float, float]] = {centre: (cx, cy)}
    for i, n in enumerate(nodes):
        angle = 2 * math.pi * i / len(nodes) - math.pi / 2
        where[str(n["name"])] = (cx + r * math.cos(angle), cy + r * math.sin(angle))
    most = max(int(n["count"]) for n in nodes)
    lines = []
    for n in nodes:
        x, y = where[str(n["name"])]
        w = 1 + 5 * int(n["count"]) / most
        lines.append(
            f'<line x1="{cx}" y1="{cy}" x2="{x:.1f}" y2="{y:.1f}" stroke="#4a7bd0" '
            f'stroke-width="{w:.1f}"><title>{e(n["count"])} memories</title></line>'
        )
    for edge in doc.get("edges", []):
        a, b = where.get(str(edge["a"])), where.get(str(edge["b"]))
        if a and b:
            lines.append(
                f'<line x1="{a[0]:.1f}" y1="{a[1]:.1f}" x2="{b[0]:.1f}" y2="{b[1]:.1f}" '
                'stroke="#c3cbd8" stroke-width="1"/>'
            )
    labels = []
    for name, (x, y) in where.items():
        href = "/entities?" + urlencode({"name": name})
        bold = ' font-weight="600"' if name == centre else ""
        labels.append(
            f'<a href="{e(href)}"><circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="#1d2330"/>'
            f'<text class="node" x="{x:.1f}" y="{y - 9:.1f}" font-size="12" text-anchor="middle"'
            f"{bold}>{e(name)}</text></a>"
        )
    return (
        f'<svg id="graph" width="{size}" height="{size}" role="img" aria-label="co-occurrence '
        f'graph" style="background:#fff;border:1px solid #dde">{"".join(lines)}'
        f"{''.join(labels)}</svg><p class=small>from the latest "
        f"{e(doc.get('memories_read'))} memories naming it</p>"
    )


# -- health -----------------------------------------------------------------------------------


def health_page(
    stats: Mapping[str, Any],
    reflect: Mapping[str, Any],
    who: str,
    can_act: bool,
    notice: str | None = None,
) -> str:
    counts = [("memories", stats.get("total")), ("entities", stats.get("entities"))]
    counts += [(f"by type: {k}", v) for k, v in (stats.get("by_type") or {}).items()]
    counts += [(f"freshness: {k}", v) for k, v in (stats.get("staleness") or {}).items()]
    counts += [
        (f"needs attention: {k}", v) for k, v in (stats.get("needs_attention") or {}).items()
    ]
    journal = stats.get("journal")
    if journal:
        counts.append(("journal position", journal.get("position")))
        counts += [(f"lag: {k}", v) for k, v in (journal.get("lag") or {}).items()]
    for k, v in (stats.get("storage_bytes") or {}).items():
        counts.append((f"bytes: {k}", v))
    table = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in counts)
    latest = "".join(
        f'<tr class="finding"><td>{memory_link(str(i["id"]), i.get("summary"))}</td>'
        f"<td>{e(i.get('type'))}</td><td>{_actions([str(i['id'])]) if can_act else ''}</td></tr>"
        for i in stats.get("recent", [])
    )
    sections = [f'<h2>Latest</h2><table id="latest">{latest}</table>']
    for key, title in (
        ("stale", "Stale"),
        ("unvalidated", "Never confirmed"),
        ("forget_candidates", "Forget candidates"),
    ):
        items: Sequence[Mapping[str, Any]] = reflect.get(key, [])
        rows = "".join(
            f'<tr class="finding"><td>{memory_link(str(i["id"]), i.get("summary"))}</td>'
            f"<td>{e(_why(i))}</td><td>{_actions([str(i['id'])]) if can_act else ''}</td></tr>"
            for i in items
        )
        sections.append(f'<h2>{title} ({len(items)})</h2><table id="{key}">{rows}</table>')
    conflicts = "".join(
        "<li>"
        + e(c.get("subject"))
        + " / "
        + e(c.get("predicate"))
        + ": "
        + ", ".join(memory_link(str(m["id"]), m.get("object")) for m in c.get("facts", []))
        + "</li>"
        for c in reflect.get("contradictions", [])
    )
    sections.append(f"<h2>Contradictions</h2><ul>{conflicts or '<li>none</li>'}</ul>")
    possible = "".join(
        "<li>"
        + " / ".join(
            memory_link(str(f["id"]), f"{f.get('subject')} {f.get('predicate')} {f.get('object')}")
            for f in c.get("facts", [])
        )
        + f" <small>({e(c.get('reason'))}) {e(c.get('what_to_do'))}</small></li>"
        for c in reflect.get("possible_conflicts", [])
    )
    sections.append(
        f'<h2>Possible conflicts</h2><ul id="possible_conflicts">{possible or "<li>none</li>"}</ul>'
    )
    dormant = ", ".join(e(d.get("name")) for d in reflect.get("dormant_entities", []))
    sections.append(f"<h2>Dormant entities</h2><p>{dormant or 'none'}</p>")
    note = f'<p class="ok" id="notice">{e(notice)}</p>' if notice else ""
    return layout(
        "Health",
        "health",
        who,
        f'<h1>Health</h1>{note}<table id="stats">{table}</table>{"".join(sections)}',
    )


def _why(item: Mapping[str, Any]) -> str:
    if "reasons" in item:
        return "; ".join(item["reasons"])
    if "age_days" in item:
        return f"{item['age_days']} days, never confirmed"
    return f"recalled {item.get('access_count')} times; {item.get('eviction') or ''}"


def confirm_forget_page(ids: Sequence[str], summaries: Mapping[str, str], who: str) -> str:
    hidden = "".join(f'<input type="hidden" name="ids" value="{e(i)}">' for i in ids)
    listed = "".join(f"<li>{memory_link(i, summaries.get(i, i))}</li>" for i in ids)
    return layout(
        "Forget",
        "health",
        who,
        f"<h1>Forget {len(ids)} memor{'y' if len(ids) == 1 else 'ies'}?</h1><ul>{listed}</ul>"
        "<p>Forgotten memories leave recall for good (the journal keeps the record).</p>"
        f'<form method="post" action="/actions/forget">{hidden}'
        '<input type="hidden" name="confirmed" value="yes">'
        '<button id="really-forget">Yes, forget</button></form> <a href="/health">cancel</a>',
    )


def done_page(title: str, doc: Mapping[str, Any], who: str) -> str:
    lines = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in doc.items())
    return layout(
        title,
        "health",
        who,
        f'<h1 id="done">{e(title)}</h1><table>{lines}</table>'
        '<p><a href="/health">back to health</a></p>',
    )


# -- journal ----------------------------------------------------------------------------------


def journal_page(doc: Mapping[str, Any] | None, error: Mapping[str, Any] | None, who: str) -> str:
    if doc is None:
        return layout("Journal", "journal", who, "<h1>Journal</h1>" + error_box(error or {}))
    head = doc["head"]
    verified = doc.get("verify")
    if verified is None:
        status = "not verified since this server started"
    elif verified["ok"]:
        status = (
            f'<span class="ok">intact</span>: {e(verified["records"])} records, head '
            f"{e(verified['head_position'])}, checked {e(verified['checked_at'])} "
            f"in {e(verified['seconds'])} s"
        )
    else:
        status = f'<span class="bad">DAMAGED</span>: {e(verified["problem"])}'
    export = doc.get("git_export")
    if export is None:
        git = "no export configured (set dashboard.git_export to its directory)"
    elif "error" in export:
        git = f"{e(export['directory'])}: {e(export['error'])}"
    else:
        state = (
            '<span class="ok">up to date</span>'
            if export["current"]
            else f'<span class="bad">{e(export["behind"])} records behind</span>'
        )
        git = (
            f"{e(export['directory'])}: position {e(export['position'])} "
            f"({e(export['recorded_at'])}), commit {e(str(export['commit'])[:12])}: {state}"
        )
    rows = "".join(
        f"<tr><td>{e(r['position'])}</td><td>{e(r['recorded_at'])}</td>"
        f"<td>{_events(r['events'])}</td><td class=small>{e(str(r['hash'])[:16])}…</td></tr>"
        for r in doc.get("records", [])
    )
    return layout(
        "Journal",
        "journal",
        who,
        f"<h1>Journal</h1><p>Head: position {e(head['position'])}, {e(head['recorded_at'])}, "
        f"hash {e(head['hash'][:16])}…</p>"
        f'<p id="verify-status">Verify: {status}</p><form method="post" action="/journal/verify">'
        '<button id="verify">Verify now</button></form>'
        f'<p id="git-export">Git export: {git}</p><h2>Latest records</h2>'
        f'<table id="records"><tr><th>position</th><th>recorded</th><th>events</th>'
        f"<th>hash</th></tr>{rows}</table>",
    )


def _events(events: Iterable[Mapping[str, Any]]) -> str:
    out = []
    for ev in events:
        ids = ev.get("ids")
        listed = list(ids) if isinstance(ids, list | tuple) else [ids] if ids else []
        links = " ".join(memory_link(i) if str(i).startswith("mem_") else e(i) for i in listed[:5])
        more = f" (+{len(listed) - 5})" if len(listed) > 5 else ""
        out.append(f"{e(ev.get('event'))} {links}{more}")
    return "<br>".join(out)


def message_page(title: str, text: str, who: str = "") -> str:
    return layout(title, "", who, f"<h1>{e(title)}</h1><p>{e(text)}</p>")
