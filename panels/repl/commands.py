"""What each window and config slash command does to a session; returns the text to print."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio

from panels.repl.slash import Command, SlashError, parse_token_count
from runtime import window_ops
from runtime.inspect import SUMMARY_META_KEYS, describe_row, format_summary, summarize
from runtime.notes import append_note
from runtime.roledoc import read_role_doc
from runtime.session import Session
from runtime.store import TurnStore


async def _summary_text(session: Session) -> str:
    store = session.store
    meta = {k: v for k in SUMMARY_META_KEYS if (v := await store.get_meta(k))}
    summary = summarize(await store.rows(), await store.slots(), session.config, meta)
    return format_summary(summary)


async def show(session: Session, args: tuple[str, ...]) -> str:
    rows = await session.store.rows()
    n = int(args[0]) if args and args[0].isdigit() else 0
    shown = rows[-n:] if n else rows
    lines = [describe_row(r) for r in shown] or ["(the window is empty)"]
    for slot in await session.store.slots():
        lines.append(f"slot {slot.position}: {slot.label} ({slot.role}) = {slot.content}")
    return "\n".join([*lines, "", await _summary_text(session)])


async def evict(session: Session, args: tuple[str, ...]) -> str:
    rows = await session.store.rows()
    if not args:
        return await _summary_text(session)
    what = args[0].lower()
    if what == "tools":
        plan = window_ops.plan_strip_tools(rows)
    elif what == "thinking":
        plan = window_ops.plan_strip_thinking(rows)
    elif what == "writes":
        plan = window_ops.plan_strip_write_pairs(rows)
    elif what in ("user", "assistant"):
        plan = window_ops.plan_drop_role(rows, what)
    elif what == "last" and len(args) == 2 and args[1].isdigit():
        plan = window_ops.plan_drop_newest(rows, int(args[1]))
    elif what.isdigit():
        plan = window_ops.plan_drop_oldest(rows, int(what))
    else:
        raise SlashError("usage: /evict [tools|thinking|writes|user|assistant|N|last N]")
    changed = await window_ops.apply_plan(session.store, plan)
    session.debug.write("eviction", f"operator_evict_{what}", rows=changed)
    return f"{changed} rows changed (pinned rows untouched)\n" + await _summary_text(session)


async def compress(session: Session, args: tuple[str, ...]) -> str:
    rows = await session.store.rows()
    current = sum(r.tokens for r in rows)
    if args and args[0] == "reads":
        from runtime.tools.compress_reads import compress_reads

        stubbed = await compress_reads(session.store)
        session.debug.write("eviction", "operator_compress_reads", rows=stubbed)
        return f"repeated reads stubbed in {len(stubbed)} rows (the latest read of each file kept)"
    target = parse_token_count(args[0]) if args else max(1_000, current // 4)
    plan = window_ops.plan_compress(rows, target)
    changed = await window_ops.apply_plan(session.store, plan)
    session.debug.write("eviction", "operator_compress", target=target, rows=changed)
    after = sum(r.tokens for r in await session.store.rows())
    return f"compressed {current} -> {after} tokens (target {target}; {changed} rows changed)"


async def skeleton(session: Session, args: tuple[str, ...]) -> str:
    from runtime.tools.skeleton import skeleton_of

    if len(args) != 1:
        raise SlashError("usage: /skeleton PATH")
    path = anyio.Path(args[0])
    try:
        source = await (await path.expanduser()).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SlashError(f"cannot read {args[0]}: {exc.strerror}") from None
    return skeleton_of(source, args[0])


async def role(session: Session, args: tuple[str, ...]) -> str:
    if not args:
        return session.config.role_doc_path or "(no role doc set)"
    path = Path(await (await anyio.Path(args[0]).expanduser()).resolve())
    await anyio.to_thread.run_sync(read_role_doc, path)
    session.update_config(role_doc_path=str(path))
    return f"role doc: {path} (read again on every turn)"


async def export(session: Session, args: tuple[str, ...]) -> str:
    from runtime.store.export import export_jsonl

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = Path(args[0]) if args else session.paths.root / f"export-{stamp}.jsonl"

    def write(store: TurnStore) -> int:
        with target.open("w", encoding="utf-8") as out:
            return export_jsonl(store, out, instance=session.paths.name)

    count = await session.store.run(write)
    return f"exported {count} rows to {target}"


async def import_(session: Session, args: tuple[str, ...]) -> str:
    from runtime.store.export import import_jsonl

    paths = [a for a in args if a != "--replace"]
    if len(paths) != 1:
        raise SlashError("usage: /import PATH [--replace]")
    path = Path(await anyio.Path(paths[0]).expanduser())
    summary = await session.store.run(import_jsonl, path, replace="--replace" in args)
    return f"imported {summary}"


async def dispatch(session: Session, command: Command) -> str:
    """Run one command on an idle panel's session; the face handles the host's own verbs."""
    name, args = command.name, command.args
    if name == "show":
        return await show(session, args)
    if name == "clear":
        removed = await session.store.clear(keep_pinned="--all" not in args)
        return f"removed {removed} rows"
    if name == "note":
        if not args:
            raise SlashError("usage: /note TEXT")
        return f"noted in {append_note(session.paths, ' '.join(args))}"
    if name == "evict":
        return await evict(session, args)
    if name == "compress":
        return await compress(session, args)
    if name == "role":
        return await role(session, args)
    if name == "export":
        return await export(session, args)
    if name == "import":
        return await import_(session, args)
    if name == "skeleton":
        return await skeleton(session, args)
    raise SlashError(f"unknown command /{name}; /help lists them")
