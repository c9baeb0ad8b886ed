"""Export and import: JSONL round-trips a store exactly and refuses what it cannot read."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from runtime.errors import ExportFormatError, StoreError
from runtime.store import TurnStore
from runtime.store.export import VERSION, export_jsonl, export_markdown, import_jsonl


def export_to(store: TurnStore, path: Path, instance: str = "scratch") -> Path:
    with path.open("w", encoding="utf-8") as out:
        export_jsonl(store, out, instance=instance)
    return path


def test_export_then_import_reproduces_the_store_exactly(
    rich_store: TurnStore, tmp_path: Path
) -> None:
    exported = export_to(rich_store, tmp_path / "window.jsonl")
    with TurnStore.open(tmp_path / "copy.sqlite") as copy:
        summary = import_jsonl(copy, exported)
        assert copy.snapshot() == rich_store.snapshot()
        assert (summary.rows, summary.slots, summary.markers, summary.meta) == (8, 3, 2, 2)
        assert not summary.replaced and summary.instance == "scratch"
        # Behaviour that depends on more than equality: the same ids come next, the same
        # bus ids count as consumed, the in-flight input is still recoverable.
        assert copy.consumed_ids() == rich_store.consumed_ids() == {41, 42}
        assert copy.recover_interrupted() == [rich_store.rows()[-1].id]
        assert copy.rows_since("after-work") == []


def test_the_rich_store_really_exercises_every_field(rich_store: TurnStore) -> None:
    rows = rich_store.rows()
    assert {r.status for r in rows} == {"complete", "interrupted", "in_flight"}
    assert any(r.pinned and r.label for r in rows) and any(r.label and not r.pinned for r in rows)
    assert any(r.compressed for r in rows) and any(r.tokens_exact for r in rows)
    kinds = {b["type"] for r in rows for b in r.blocks}
    assert {"thinking", "redacted_thinking", "tool_use", "tool_result", "text"} <= kinds
    assert rows[0].id == 2, "row 1 was deleted, so the id sequence has a gap"
    assert [s.position for s in rich_store.slots()] == [0, 1, 2]


def test_second_export_is_identical_but_for_its_time(rich_store: TurnStore, tmp_path: Path) -> None:
    first = export_to(rich_store, tmp_path / "one.jsonl")
    with TurnStore.open(tmp_path / "copy.sqlite") as copy:
        import_jsonl(copy, first)
        second = export_to(copy, tmp_path / "two.jsonl")

    def without_time(path: Path) -> list[str]:
        lines = path.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        del header["exported_at"]
        return [json.dumps(header), *lines[1:]]

    assert without_time(first) == without_time(second)


def test_next_id_after_import_skips_ids_deleted_before_export(
    store: TurnStore, make_row, tmp_path: Path
) -> None:
    ids = store.append([make_row("a"), make_row("b"), make_row("c")])
    store.delete_rows(ids[1:])
    exported = export_to(store, tmp_path / "w.jsonl")
    with TurnStore.open(tmp_path / "copy.sqlite") as copy:
        import_jsonl(copy, exported)
        assert copy.append([make_row("d")]) == [ids[-1] + 1]


def test_import_into_a_non_empty_store_needs_replace(
    rich_store: TurnStore, make_row, tmp_path: Path
) -> None:
    exported = export_to(rich_store, tmp_path / "w.jsonl")
    with TurnStore.open(tmp_path / "busy.sqlite") as target:
        target.append([make_row("existing")])
        before = target.snapshot()
        with pytest.raises(StoreError, match="--replace"):
            import_jsonl(target, exported)
        assert target.snapshot() == before
        summary = import_jsonl(target, exported, replace=True)
        assert summary.replaced and target.snapshot() == rich_store.snapshot()


def header_and_lines(path: Path) -> tuple[dict, list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), lines[1:]


def write_lines(path: Path, header: dict, lines: list[str]) -> Path:
    path.write_text("\n".join([json.dumps(header), *lines]) + "\n", encoding="utf-8")
    return path


def test_newer_format_version_is_refused_and_nothing_changes(
    rich_store: TurnStore, tmp_path: Path
) -> None:
    header, lines = header_and_lines(export_to(rich_store, tmp_path / "w.jsonl"))
    header["version"] = VERSION + 1
    header["something_new"] = True
    newer = write_lines(tmp_path / "newer.jsonl", header, lines)
    with TurnStore.open(tmp_path / "copy.sqlite") as copy:
        with pytest.raises(ExportFormatError, match="newer mnemara") as info:
            import_jsonl(copy, newer)
        assert (info.value.path, info.value.line) == (newer, 1)
        assert copy.rows() == []


def set_line(index: int, text: str):
    return lambda lines: lines.__setitem__(index, text)


def copy_line(source: int, target: int):
    return lambda lines: lines.__setitem__(target, lines[source])


# Lines after the header in the rich store's export: 8 rows (0-7), 3 slots (8-10), 2 markers,
# 2 meta entries.
@pytest.mark.parametrize(
    ("damage", "line", "message"),
    [
        pytest.param(set_line(2, "{not json"), 4, "not valid JSON", id="bad-json"),
        pytest.param(set_line(0, '{"kind": "row", "id": "1"}'), 2, "id", id="wrong-type"),
        pytest.param(set_line(1, '{"kind": "mystery"}'), 3, "unknown line kind", id="kind"),
        pytest.param(set_line(1, "[1, 2]"), 3, "expected a JSON object", id="not-object"),
        pytest.param(
            lambda lines: lines.pop(), None, "promises 2 meta lines, file has 1", id="truncated"
        ),
        pytest.param(copy_line(0, 1), 3, r"second row with id 2 \(first on line 2", id="dup-row"),
        pytest.param(copy_line(8, 9), 11, "second slot with label 'hunger'", id="dup-slot"),
    ],
)
def test_malformed_lines_name_the_file_and_line(
    rich_store: TurnStore, tmp_path: Path, damage, line: int | None, message: str
) -> None:
    header, lines = header_and_lines(export_to(rich_store, tmp_path / "w.jsonl"))
    damage(lines)
    broken = write_lines(tmp_path / "broken.jsonl", header, lines)
    with TurnStore.open(tmp_path / "copy.sqlite") as copy:
        with pytest.raises(ExportFormatError, match=message) as info:
            import_jsonl(copy, broken)
        assert "nothing was imported" in str(info.value)
        assert info.value.path == broken and str(broken) in str(info.value)
        if line is not None:
            assert info.value.line == line and f"{broken}:{line}" in str(info.value)
        assert copy.snapshot().is_empty and copy.get_meta("last_usage") is None


def test_a_file_that_is_not_an_export_is_refused(store: TurnStore, tmp_path: Path) -> None:
    for name, text in [("empty", ""), ("other", '{"kind": "header", "format": "x"}\n')]:
        path = tmp_path / f"{name}.jsonl"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ExportFormatError, match=r"not a mnemara export|empty file"):
            import_jsonl(store, path)


def test_markdown_export_is_readable(rich_store: TurnStore) -> None:
    out = io.StringIO()
    export_markdown(rich_store, out, instance="scratch", role_doc_text="You are careful.")
    text = out.getvalue()
    assert text.startswith("# mnemara export: scratch")
    assert "You are careful." in text
    assert "**#00 hunger** (system): 62 / 100" in text
    assert "**tool call** `Read`" in text and '"file_path": "/tmp/x.py"' in text
    assert "<summary>thinking</summary>" in text
    assert "pinned 03-health" in text and "interrupted" in text and "in flight" in text
    text.encode("utf-8")  # lone surrogates from tool output do not break the file
