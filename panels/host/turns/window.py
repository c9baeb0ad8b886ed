"""The window verbs applied to a panel's live session, between its turns.

The dispatcher (dispatch.py) holds the panel (`PanelRunner.between_turns`) while one of these
runs, so no turn reads the store meanwhile. Each returns the outcome an operator reads, or
raises a `MnemaraError` / `OSError` that the dispatcher turns into a failed outcome.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread

from panels.errors import WindowVerbError as WindowVerbError  # defined there, re-exported
from panels.hostdb import verbs
from runtime.errors import LaneError
from runtime.instance.config import write_text_atomic
from runtime.instance.lane import read_lane, split_front_matter
from runtime.sandbox import Sandbox
from runtime.store import TurnStore
from runtime.turn.session import Session
from runtime.window import ops as window_ops


async def apply_window(session: Session, verb: verbs.Verb) -> str:
    if isinstance(verb, verbs.Evict):
        return await evict(session, verb)
    if isinstance(verb, verbs.Pin | verbs.Unpin):
        pinned = isinstance(verb, verbs.Pin)
        if await session.store.row(verb.row_id) is None:
            raise WindowVerbError(f"no row {verb.row_id} in the window")
        await session.store.set_pinned(verb.row_id, pinned)
        return f"row {verb.row_id} {'pinned' if pinned else 'unpinned'}"
    if isinstance(verb, verbs.Compress):
        return await compress(session, verb)
    if isinstance(verb, verbs.Clear):
        removed = await session.store.clear(keep_pinned=not verb.all)
        kept = "" if verb.all else " (pinned rows and slots kept)"
        return f"removed {removed} rows{kept}"
    if isinstance(verb, verbs.SetSlot):
        if verb.content is None:
            gone = await session.store.delete_slot(verb.label)
            return f"slot {verb.label!r} {'removed' if gone else 'was not set'}"
        slot = await session.store.upsert_slot(verb.label, "system", verb.content)
        return f"slot {slot.label!r} = {len(slot.content)} chars"
    if isinstance(verb, verbs.Export):
        return await export(session, verb.path)
    if isinstance(verb, verbs.Import):
        return await import_(session, verb.path, replace=verb.replace)
    if isinstance(verb, verbs.SetRole):
        return await role(session, verb)
    if isinstance(verb, verbs.Note):
        memory = session.memory
        written = await memory.run(memory.remember, verb.text, verb.category)
        return f"noted in {written.atom.source}{written.summary()}"
    raise WindowVerbError(f"{verb.name} is not a window verb")


async def evict(session: Session, verb: verbs.Evict) -> str:
    rows = await session.store.rows()
    what = verb.what
    if what in ("oldest", "newest") and verb.count is None:
        raise WindowVerbError(f"evict {what} needs a count")
    if (what == "rows") != (verb.row_ids is not None):
        raise WindowVerbError("evict rows needs row_ids, and only evict rows takes them")
    if what == "tools":
        plan = window_ops.plan_strip_tools(rows)
    elif what == "thinking":
        plan = window_ops.plan_strip_thinking(rows)
    elif what == "writes":
        plan = window_ops.plan_strip_write_pairs(rows)
    elif what in ("user", "assistant"):
        plan = window_ops.plan_drop_role(rows, what)
    elif what == "oldest":
        plan = window_ops.plan_drop_oldest(rows, verb.count or 0)
    elif what == "rows":
        plan = window_ops.plan_drop_ids(rows, verb.row_ids or ())
    else:
        plan = window_ops.plan_drop_newest(rows, verb.count or 0)
    changed = await window_ops.apply_plan(session.store, plan)
    session.debug.write("eviction", f"operator_evict_{what}", rows=changed)
    return f"{changed} rows changed (pinned rows untouched)"


async def compress(session: Session, verb: verbs.Compress) -> str:
    if verb.reads:
        from runtime.tools.compress_reads import compress_reads

        stubbed = await compress_reads(session.store)
        session.debug.write("eviction", "operator_compress_reads", rows=stubbed)
        return f"repeated reads stubbed in {len(stubbed)} rows (the latest read of each file kept)"
    rows = await session.store.rows()
    current = sum(r.tokens for r in rows)
    target = verb.target_tokens or max(1_000, current // 4)
    changed = await window_ops.apply_plan(session.store, window_ops.plan_compress(rows, target))
    session.debug.write("eviction", "operator_compress", target=target, rows=changed)
    after = sum(r.tokens for r in await session.store.rows())
    return f"compressed {current} -> {after} tokens (target {target}; {changed} rows changed)"


async def export(session: Session, path: str) -> str:
    from runtime.store.export import export_jsonl

    def write(store: TurnStore) -> int:
        target = Path(path).expanduser()
        if target.is_dir():
            raise WindowVerbError(f"{target} is a directory; name a file to write")
        if not target.parent.is_dir():
            raise WindowVerbError(f"{target.parent} does not exist; create it first")
        with target.open("w", encoding="utf-8") as out:
            return export_jsonl(store, out, instance=session.paths.name)

    count = await session.store.run(write)
    return f"exported {count} rows to {path}"


async def import_(session: Session, path: str, *, replace: bool) -> str:
    from runtime.store.export import import_jsonl

    def load(store: TurnStore) -> str:
        source = Path(path).expanduser()
        if not source.is_file():
            raise WindowVerbError(f"{source}: no such file")
        return str(import_jsonl(store, source, replace=replace))

    return f"imported {await session.store.run(load)}"


async def role(session: Session, verb: verbs.SetRole) -> str:
    if verb.text is not None:
        current = session.role.path
        if current is None:
            raise WindowVerbError("the panel has no role doc file to edit; set a path first")
        try:  # a lane that cannot be read would halt the panel at its next turn: not written
            split_front_matter(verb.text, str(current))
        except LaneError as exc:
            raise WindowVerbError(f"not saved: {exc}") from None
        await anyio.to_thread.run_sync(write_text_atomic, current, verb.text)
        return f"role doc {current} rewritten ({len(verb.text)} chars; read on the next turn)"
    assert verb.path is not None
    path = Path(await (await anyio.Path(verb.path).expanduser()).resolve())
    # Refuses a directory, a binary or missing file, and a lane that cannot be read.
    await anyio.to_thread.run_sync(read_lane, path)
    if verb.save:
        session.update_config(role_doc_path=str(path))
    else:
        session.use_role_doc(path)
    # Read-only inside every panel's sandbox from its next turn, as the team's role docs are
    # (confine.py): a panel that rewrote it would steer this one, or widen its lane.
    sandbox = getattr(session.driver, "sandbox", None)
    if isinstance(sandbox, Sandbox):
        sandbox.added.add(path)
    return f"role doc: {path} (read again on every turn)"
