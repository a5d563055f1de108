"""Restore a dump: journal memories exactly as the dump describes them, ids and times kept.

The lines are checked by :mod:`ferrex.porting.dump` and decided by
:mod:`ferrex.core.decide.restore` (what each line journals, and when it is skipped). Chunks
are group-committed and their texts embedded in one batch, through the writer's one write
path like every store (:meth:`ferrex.write.writer.Writer.run`, :mod:`ferrex.core.runner`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
                item, batch.view, settings=writer.settings, entities=dumped
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
    restored = [o for o in outcomes if isinstance(o, Restore)]
    assert len(restored) == len(items)  # a restore decision never refuses
    if writer.settings.budget_bytes is not None and any(r.status == "stored" for r in restored):
        writer.enforce_budget(writer.settings.budget_bytes)
    return restored
