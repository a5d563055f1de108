"""Restore a dump: journal memories exactly as the dump describes them, ids and times kept.

The lines are checked by :mod:`ferrex.porting.dump` and decided by
:mod:`ferrex.core.decide.restore` (what each line journals, and when it is skipped). Chunks
are group-committed and their texts embedded in one batch, through the writer's one write
path like every store (:meth:`ferrex.write.writer.Writer.run`, :mod:`ferrex.core.runner`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from ferrex.core.decide import Decision
from ferrex.core.decide.restore import (
    Item,
    Restore,
    Restored,
    RestoredEntity,
    RestoredFlag,
    RestoredFold,
    decide_flag,
    decide_fold,
    decide_restore,
    decide_restored_entity,
    restored_body,
    split_offs,
)
from ferrex.core.runner import Batch
from ferrex.write.writer import Writer
from projections.documents import memory_text


def restore_many(
    writer: Writer,
    items: Sequence[Item],
    *,
    chunk: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> list[Restore]:
    """Restore every item not already present; one outcome per item, in order."""

    dumped = {i.entity_id: i for i in items if isinstance(i, RestoredEntity)}
    split = split_offs(dumped)
    order = _history_order(items, split)
    items = [items[k] for k in order]
    memories = {i.memory_id: i for i in items if isinstance(i, Restored)}
    folded = {m: i.summary_id for i in items if isinstance(i, RestoredFold) for m in i.memory_ids}
    fresh: set[str] = set()
    """Memories and entities this restore journals (a flag between two that were there
    already is not journaled again: importing a dump twice adds nothing)."""

    def texts(part: Sequence[Item]) -> list[str]:
        stored = [i for i in part if isinstance(i, Restored)]
        return [memory_text(i.valid.type, restored_body(i, None)) for i in stored]

    def decide(item: Item, batch: Batch) -> Decision[Restore]:
        if isinstance(item, RestoredFlag):
            return decide_flag(item, batch.view, fresh)
        if isinstance(item, RestoredFold):
            return decide_fold(item, batch.view, fresh, memories)
        if isinstance(item, RestoredEntity):
            decided = decide_restored_entity(
                item, batch.view, settings=writer.settings, entities=dumped, split_ids=split
            )
        else:
            decided = decide_restore(
                item, batch.view, new_id=writer.new_id, settings=writer.settings,
                entities=dumped, folded_into=folded.get(item.memory_id),
            )  # fmt: skip
        if decided.result.status == "stored":
            fresh.add(decided.result.id)
        return decided

    outcomes = writer.run(items, decide, texts=texts, chunk=chunk, progress=progress)
    ran = [o for o in outcomes if isinstance(o, Restore)]
    assert len(ran) == len(items)  # a restore decision never refuses
    restored = [done for _, done in sorted(zip(order, ran, strict=True), key=lambda p: p[0])]
    if writer.settings.budget_bytes is not None and any(r.status == "stored" for r in restored):
        writer.enforce_budget(writer.settings.budget_bytes)
    return restored


def _history_order(items: Sequence[Item], split: Collection[str]) -> list[int]:
    """The order the items are restored in (indexes into ``items``): the dump's, but for an
    entity split off a merged one (``split``: :func:`ferrex.core.decide.restore.split_offs`),
    restored after the merged entities, as it happened (the merge, then the split), and
    before the entities merged into it. The entity lines come first in a dump, so they stay
    before the memories."""

    def stage(item: Item) -> int:
        if not isinstance(item, RestoredEntity):
            return 4
        if item.merged_into is None:
            return 2 if item.entity_id in split else 0
        return 3 if item.merged_into in split else 1

    return sorted(range(len(items)), key=lambda k: stage(items[k]))
