"""What of a turn's text is the conversation: not the context ferrex's hooks injected (between
:data:`OPEN` and :data:`CLOSE`, which ``ferrex.hooks.context`` wraps it in), not the
``<system-reminder>`` blocks a client adds. The hooks' prompt path and the capture of a
session (``ferrex.porting.transcripts``) both read a turn through it. Imports nothing heavy:
the prompt hook's lean path loads it."""

from __future__ import annotations

import re
from typing import Final

OPEN: Final = "<ferrex-memory>"
CLOSE: Final = "</ferrex-memory>"
_OURS: Final = re.compile(re.escape(OPEN) + r".*?(?:" + re.escape(CLOSE) + r"|\Z)", re.S)
_REMINDERS: Final = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)


def without_ours(text: str) -> str:
    """``text`` without the context ferrex's hooks injected (an unclosed block to the end)."""
    return _OURS.sub("", text).strip()


def conversation_text(text: str) -> str:
    """What of a message's text is the conversation: not ferrex's context, not the
    ``<system-reminder>`` blocks the client adds to a turn."""
    return _REMINDERS.sub("", without_ours(text)).strip()
