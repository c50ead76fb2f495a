"""new_text_reads: chunk_read can only name chunks that would show new text."""

from __future__ import annotations

from arag.harness.contract import Constraint, Offer, Policy, RunView
from arag.harness.registry import register

MAX_READABLE = 20  # references offered to a read: the latest search's hits, then the other chunks shown


@register
class NewTextReads(Policy):
    """Through constrained decoding a read may only name chunks not read yet: the latest search's unread hits as
    "hit N", then other unread chunks shown as hits or neighbours. A small model looped on reads of chunks it
    had read (the tracker's notice told it so, and it read again); now it cannot. With nothing left to read, the
    read is not offered at all. (JSON actions only.)"""

    name = "new_text_reads"
    summary = 'chunk_read can only name unread chunks ("hit 1", or ids shown as hits or neighbours)'

    def constrain(self, run: RunView, offer: Offer) -> Constraint:
        read = run.read_ids
        last = run.last_search
        hits = last.hits if last else ()
        refs = [f"hit {i}" for i, c in enumerate(hits, start=1) if c not in read]
        refs += [c for c in run.offered if c not in read and c not in hits]
        if "chunk_read" in offer.tools:
            self.acted()
        return Constraint(readable=tuple(refs[:MAX_READABLE]))
