"""The pure helpers of tools/bench_million.py: the stand-in vectors, the memory lines."""

from __future__ import annotations

import argparse
import json
import random
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

from tools.bench_million import (
    BuildResult,
    HashProjection,
    ReplayResult,
    load_built,
    parse_status,
    phase_list,
    queries,
)


def test_stand_in_vectors_are_unit_rows_the_same_for_a_seed() -> None:
    texts = ["Alice restarted billing on prod", "", "INC-12345: billing returned 5xx"]
    a = HashProjection().vectors(texts)
    b = HashProjection().vectors(texts)
    assert a.shape == (3, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(a, b)  # no salted hash: the same in every process
    assert not np.array_equal(a, HashProjection(seed=28).vectors(texts))


def test_stand_in_vectors_are_nearer_for_texts_sharing_words() -> None:
    near, other, far = HashProjection().vectors(
        [
            "Bob rolled back billing on staging after the retry storm",
            "billing on staging rolled back by Bob",
            "quarterly report of the catalog team for June",
        ]
    )
    assert float(near @ other) > 0.6
    assert float(near @ other) > float(near @ far) + 0.4


def test_stand_in_counts_what_it_embedded() -> None:
    projection = HashProjection()
    rows = list(projection.embed(["one text", "two texts"], batch_size=1))
    assert len(rows) == 2 and projection.texts == 2
    assert projection.vectors([]).shape == (0, 384)


def test_parse_status_reads_the_memory_lines_in_bytes() -> None:
    status = "Name:\tpython\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 600 kB\n"
    status += "RssFile:\t 400 kB\nRssShmem:\t 24 kB\nThreads:\t4\n"
    assert parse_status(status) == {
        "VmHWM": 2048 * 1024,
        "VmRSS": 1024 * 1024,
        "RssAnon": 600 * 1024,
        "RssFile": 400 * 1024,
        "RssShmem": 24 * 1024,
    }
    assert parse_status("Name:\tpython\n") == {}


def test_queries_are_new_distinct_texts_in_a_namespace() -> None:
    samples = [("Carol drained search pods in prod-12 after a full disk", "acme-infra")]
    made = queries(random.Random(1), samples, 40)
    assert len(made) == 40
    assert len({q.query for q in made}) == 40
    assert all(q.namespace for q in made)
    windows = [q for q in made if q.query in samples[0][0]]
    assert windows and all(q.namespace == "acme-infra" for q in windows)


def test_profile_phases_are_checked() -> None:
    assert phase_list("replay, recall") == frozenset({"replay", "recall"})
    assert phase_list("") == frozenset()
    with pytest.raises(argparse.ArgumentTypeError, match="unknown phase optimise"):
        phase_list("replay,optimise")


def test_a_kept_build_reads_back_as_it_was_written(tmp_path: Path) -> None:
    built = BuildResult(10, 8, 2, 1, {"episodic": 8}, 0.5, 0.4, [("a text", "work")], {"VmRSS": 1})
    replayed = ReplayResult(1.5, 1.2, 10, 0.1, 0.1, 12, {"VmRSS": 2}, None)
    path = tmp_path / "built.json"
    path.write_text(json.dumps({"build": asdict(built), "replay": asdict(replayed)}))
    assert load_built(path) == (built, replayed)  # the samples as tuples again
