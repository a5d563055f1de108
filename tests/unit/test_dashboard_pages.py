"""The dashboard's HTML rendering (pure): escaping, the score bars, the timeline, optional
fields shown when a document carries them."""

from __future__ import annotations

import re

from ferrex.server.dashboard import pages

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _hit(**extra: object) -> dict[str, object]:
    return {"id": "mem_1", "type": "episodic", "content": HOSTILE, "entities": [HOSTILE],
            "freshness": {"label": "fresh"}, "score": 0.5,
            "explain": {"dense": 0.8, "bm25": 2.0, "context": None, "boost": 1.1,
                        "rerank": None}, **extra}  # fmt: skip


def test_memory_text_and_names_are_escaped_everywhere() -> None:
    doc = {"query": HOSTILE, "namespace": HOSTILE, "results": [_hit()]}
    html = pages.search_page({"q": HOSTILE}, doc, None, HOSTILE)
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;" in html
    memory = {"id": '"><b>', "summary": HOSTILE, "body": {"content": HOSTILE},
              "entities": [HOSTILE]}  # fmt: skip
    html = pages.memory_page(memory, {"versions": []}, "operator", can_act=True)
    assert "<script>" not in html and '"><b>' not in html
    entity = {"name": HOSTILE, "aliases": [{"alias": HOSTILE, "match": "exact", "score": 1}],
              "memories": [],
              "graph": {"nodes": [{"name": HOSTILE, "count": 1}], "edges": []}}  # fmt: skip
    html = pages.entities_page(None, entity, None, HOSTILE, "operator")
    assert "<script>" not in html and "<img" not in html


def test_bars_are_relative_to_the_best_hit_and_absent_signals_empty() -> None:
    doc = {"namespace": "default",
           "results": [_hit(), _hit(id="mem_2", explain={"dense": 0.4, "bm25": 0.5})]}  # fmt: skip
    html = pages.search_page({"q": "x"}, doc, None, "operator")
    widths = re.findall(r'title="(\w+)"><i style="width:(\d+)%', html)
    assert widths[:5] == [("dense", "100"), ("BM25", "100"), ("context", "0"),
                          ("recency", "100"), ("rerank", "0")]  # fmt: skip
    assert widths[5:7] == [("dense", "50"), ("BM25", "25")]


def test_the_timeline_draws_one_bar_per_version_in_time_order() -> None:
    versions = [
        {"id": "a", "summary": "v1", "t_valid": "2026-01-01T00:00:00Z",
         "t_invalid": "2026-02-01T00:00:00Z"},
        {"id": "b", "summary": "v2", "t_valid": "2026-02-01T00:00:00Z", "t_invalid": None,
         "last_validated": "2026-02-15T00:00:00Z"},
    ]  # fmt: skip
    now = pages._epoch("2026-03-01T00:00:00Z")
    svg = pages.timeline(versions, now=now)
    rects = re.findall(r'<rect class="span" x="([\d.]+)" y="\d+" width="([\d.]+)"', svg)
    assert len(rects) == 2
    (x0, w0), (x1, _) = ((float(x), float(w)) for x, w in rects)
    assert x0 < x1 and abs(x0 + w0 - x1) < 0.2  # the second starts where the first ended
    assert svg.count("<circle") == 1  # the confirmation
    assert pages.timeline([{"id": "c", "t_valid": None}]) == ""


def test_fields_of_later_features_are_shown_when_present() -> None:
    shown = pages.search_page({"q": "x"}, {"results": [_hit(pinned=True, importance=0.9)]},
                              None, "operator")  # fmt: skip
    assert "pinned: True" in shown and "importance: 0.9" in shown
    plain = pages.search_page({"q": "x"}, {"results": [_hit(pinned=False)]}, None, "operator")
    assert "pinned" not in plain


def test_the_health_page_lists_possible_conflicts_with_links() -> None:
    reflect = {
        "possible_conflicts": [
            {
                "reason": "head word",
                "facts": [
                    {"id": "mem_A", "subject": "billing", "predicate": "owner", "object": "Nova"},
                    {"id": "mem_B", "subject": "billing <service>", "predicate": "owner",
                     "object": "Atlas"},
                ],
            }
        ]
    }  # fmt: skip
    html = pages.health_page({}, reflect, "operator", can_act=False)
    section = html[html.index("Possible conflicts") :]
    assert 'href="/memory/mem_A"' in section and 'href="/memory/mem_B"' in section
    assert "billing &lt;service&gt;" in section and "head word" in section
    empty = pages.health_page({}, {}, "operator", can_act=False)
    assert '<ul id="possible_conflicts"><li>none</li></ul>' in empty
