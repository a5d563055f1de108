"""Whether a text fits the model's window: the short-ASCII shortcut agrees with the tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ferrex.models.loading import TokenCounter

BUNDLED_TOKENIZER = Path(__file__).parents[2] / "ferrex/models/data/all-MiniLM-L6-v2/tokenizer.json"
WINDOW = 24


def _counter(directory: Path, tokenizer: Path = BUNDLED_TOKENIZER) -> TokenCounter:
    directory.mkdir(exist_ok=True)
    shutil.copy(tokenizer, directory / "tokenizer.json")
    (directory / "tokenizer_config.json").write_text(json.dumps({"model_max_length": WINDOW}))
    return TokenCounter(directory)


@pytest.fixture(scope="module")
def counter(tmp_path_factory: pytest.TempPathFactory) -> TokenCounter:
    return _counter(tmp_path_factory.mktemp("tokenizer"))


# Punctuation is one token per character: the densest ASCII text there is.
ASCII = st.text(st.characters(min_codepoint=0, max_codepoint=127), max_size=3 * WINDOW)


@settings(max_examples=300)
@given(
    text=ASCII | st.builds("".join, st.lists(st.sampled_from(["!", "a", " ", "ab", "\t", "\x00"])))
)
def test_fits_agrees_with_the_token_count(counter: TokenCounter, text: str) -> None:
    count = counter.count_tokens(text)
    assert count is not None
    assert counter.fits(text) == (count <= WINDOW)


def test_the_densest_text_at_the_bound_fits_and_one_more_character_does_not(
    counter: TokenCounter,
) -> None:
    counter.fits("")  # loads the tokenizer, which sets the bound
    bound = counter._surely_fits
    assert bound == WINDOW - 2  # [CLS] and [SEP]
    assert counter.count_tokens("!" * bound) == WINDOW and counter.fits("!" * bound)
    assert not counter.fits("!" * (bound + 1))


def test_other_tokenizer_kinds_are_always_tokenised(tmp_path: Path) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers

    bpe = Tokenizer(models.BPE(vocab={"a": 0, "b": 1}, merges=[], unk_token="a"))
    bpe.pre_tokenizer = pre_tokenizers.Metaspace()
    bpe.save(str(tmp_path / "bpe.json"))
    counter = _counter(tmp_path / "model", tmp_path / "bpe.json")
    assert counter.fits("ab")
    assert counter._surely_fits == -1
    assert not counter.fits("ab " * WINDOW)


def test_spaces_give_no_tokens_so_a_long_spaced_text_fits_uncounted(counter: TokenCounter) -> None:
    counter.fits("")
    spaced = " ".join("!" * counter._surely_fits)  # nearly twice the bound long
    assert len(spaced) > counter._surely_fits
    assert counter.count_tokens(spaced) == WINDOW
    assert counter.fits(spaced)


@settings(max_examples=300)
@given(
    text=ASCII
    | st.text(max_size=2 * WINDOW)
    | st.builds("".join, st.lists(st.sampled_from(["!", "a", " ", "é", "東", "\t"])))
)
def test_count_unless_fits_counts_every_text_that_may_not_fit(
    counter: TokenCounter, text: str
) -> None:
    """The window check's count: None only for a text within the window, else the count."""
    count = counter.count_tokens(text)
    assert count is not None
    answer = counter.count_unless_fits(text)
    assert answer == count or (answer is None and count <= WINDOW)
    if text.isascii() and len(text) - text.count(" ") <= WINDOW - 2:
        assert answer is None  # surely short: not tokenised


def test_count_unless_fits_loads_the_bound_first(tmp_path: Path) -> None:
    fresh = _counter(tmp_path / "model")
    assert fresh.count_unless_fits("a short note") is None  # the first call already skips
    assert fresh.count_unless_fits("!" * WINDOW) == WINDOW + 2


def test_the_counter_remembers_its_last_counts_and_no_long_text(tmp_path: Path) -> None:
    from ferrex.models.loading import REMEMBERED_CHARS, REMEMBERED_COUNTS

    fresh = _counter(tmp_path / "model")
    texts = [f"état numéro {i}" for i in range(REMEMBERED_COUNTS + 6)]
    counts = [fresh.count_tokens(text) for text in texts]
    assert list(fresh._counts) == texts[6:]  # the oldest forgotten first
    assert [fresh.count_tokens(text) for text in texts] == counts  # the same, remembered or not
    long = "é" * (REMEMBERED_CHARS + 1)
    assert fresh.count_tokens(long) is not None and long not in fresh._counts
