"""Wiki page names: what a slug may be, and the file it names (never outside `wiki/`).

A slug is NFKC-normalised and lower-cased, then must read `[a-z0-9-]+(/[a-z0-9-]+)*` within
the caps below. Look-alike letters (Cyrillic `а`, Greek `ο`) survive NFKC and are refused;
full-width ASCII folds to plain ASCII. The file is `<root>/<slug>.md`, and it is refused when
any part of the way there is a symlink or resolves outside the root.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from runtime.errors import WikiSlugError

MAX_SLUG = 120
MAX_SEGMENT = 60
MAX_DEPTH = 4
_SLUG = re.compile(r"[a-z0-9-]+(/[a-z0-9-]+)*")


def check_slug(raw: str) -> str:
    """The canonical slug for `raw`, or WikiSlugError saying what is wrong and what would do."""
    slug = unicodedata.normalize("NFKC", raw).strip().lower()
    slug = slug.removeprefix("wiki/").removesuffix(".md")
    if not slug:
        raise WikiSlugError("empty page name", slug=raw)
    if len(slug) > MAX_SLUG:
        raise WikiSlugError(f"longer than {MAX_SLUG} characters", slug=raw)
    if not _SLUG.fullmatch(slug):
        hint = suggest_slug(raw)
        tail = f"; try {hint!r}" if hint else ""
        raise WikiSlugError(
            "use lower-case letters, digits and '-', with '/' between parts" + tail, slug=raw
        )
    parts = slug.split("/")
    if len(parts) > MAX_DEPTH:
        raise WikiSlugError(f"more than {MAX_DEPTH} levels deep", slug=raw)
    if any(len(part) > MAX_SEGMENT for part in parts):
        raise WikiSlugError(f"a part is longer than {MAX_SEGMENT} characters", slug=raw)
    return slug


def suggest_slug(text: str, words: int = 8) -> str:
    """A valid slug made from the ASCII words of `text` ("" when it has none)."""
    folded = unicodedata.normalize("NFKC", text).lower()
    parts = []
    for segment in folded.split("/")[:MAX_DEPTH]:
        part = "-".join(re.findall(r"[a-z0-9]+", segment)[:words])[:MAX_SEGMENT].strip("-")
        if part:
            parts.append(part)
    return "/".join(parts)[:MAX_SLUG].strip("/-")


def page_path(root: Path, slug: str) -> Path:
    """The file of a checked slug under `root`; WikiSlugError when the way there leaves it."""
    target = root.joinpath(*f"{slug}.md".split("/"))
    base = root.resolve()
    step = root
    for part in target.relative_to(root).parts:
        step = step / part
        if step.is_symlink():
            raise WikiSlugError(
                f"{step} is a symbolic link; wiki pages must be plain files", slug=slug
            )
    if not target.resolve().is_relative_to(base):
        raise WikiSlugError(f"resolves outside {root}", slug=slug)
    return target
