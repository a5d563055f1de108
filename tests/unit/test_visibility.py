"""The visibility rule's decisions for cascades and cross-visibility supersedes (pure)."""

from __future__ import annotations

from ferrex.rules.visibility import Fate, after_forget, all_readers_see, in_scope, sees_scope

SHARED = ("bob", "shared")


def test_an_entity_a_memory_everyone_sees_still_names_stays() -> None:
    assert after_forget(None, [SHARED], [("carol", "shared")]) == Fate()
    assert after_forget(None, [SHARED], [(None, "private")]) == Fate()  # unowned: everyone's


def test_with_only_private_mentions_left_it_is_kept_for_their_agents() -> None:
    left = [("alice", "private"), ("carol", "private"), ("alice", "private")]
    assert after_forget(None, [SHARED], left) == Fate(kept_for=("alice", "carol"))
    assert after_forget(None, [SHARED], []) == Fate(dropped=True)


def test_a_kept_entity_goes_from_each_agent_with_their_last_mention() -> None:
    kept = ("alice", "carol")
    assert after_forget(kept, [("alice", "private")], [("carol", "private")]) == Fate(
        kept_for=("carol",)
    )
    assert after_forget(kept, [("alice", "private")], [("alice", "private")]) == Fate()
    assert after_forget(("carol",), [("carol", "private")], []) == Fate(dropped=True)


def test_forgetting_private_memories_never_takes_a_shared_entity() -> None:
    assert after_forget(None, [("alice", "private")], []) == Fate()


def test_a_private_scope_goes_with_its_last_memory() -> None:
    assert after_forget(("alice",), [("alice", "private")], []) == Fate(dropped=True)
    assert after_forget(("alice",), [("alice", "private")], [("alice", "private")]) == Fate()


def test_kept_entities_are_seen_and_named_by_their_agents_only() -> None:
    assert sees_scope("alice", None, ("alice",)) and not sees_scope("bob", None, ("alice",))
    assert sees_scope(None, None, ("alice",))  # the operator sees everything
    assert in_scope("alice", None, ("alice",)) and not in_scope(None, None, ("alice",))
    assert not in_scope("bob", None, ("alice",))
    assert in_scope(None, None, None) and not in_scope(None, "alice", None)


def test_a_shared_memory_is_read_by_those_who_may_not_see_its_authors_private_ones() -> None:
    assert not all_readers_see("alice", "shared", "alice", "private")
    assert all_readers_see("alice", "shared", "bob", "shared")
    assert all_readers_see("alice", "private", "alice", "private")
    assert not all_readers_see(None, "shared", "alice", "private")  # the operator's store
