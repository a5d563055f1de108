"""The words of a change's note looked for in the namespace's values (pure)."""

from __future__ import annotations

from ferrex.core.decide.weighing import NOTE_WORDS, _note_words


def test_a_short_note_gives_each_word_of_four_letters_or_more_but_its_own() -> None:
    words = _note_words("dropped Redis for sessions, simpler in pg", {"sessions"})
    assert words == ("dropped", "redis", "simpler")


def test_a_long_note_keeps_the_words_most_like_names() -> None:
    filler = " ".join(f"ordinaryword{chr(97 + i)}" for i in range(20))
    words = _note_words(f"{filler} we retired Airflow and bcl2fastq", set())
    assert len(words) == NOTE_WORDS
    assert {"airflow", "bcl2fastq"} <= set(words)
    assert "retired" not in words  # shorter than the filler, and written plain
