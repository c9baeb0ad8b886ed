"""The git state kept current between full measures, from inotify events (inotify.py).

`WatchedGit.state()` answers what `git_state` (gitstatus.py) would answer now, the same
digest, without running git on most calls:

- when first asked in a repository it watches the work tree (but ignored directories and
  nested repositories) and the git directory, then measures in full: the `git status`
  output, split into one record per path, is the baseline;
- before each answer it drains the events (exact: see inotify.py). With none, the last
  digest stands: no git, no file read;
- a changed work-tree file gets the record git would print for it now (gitrecords.py):
  from its record, or else its index entry (`git ls-files -s`, read once a baseline when
  first needed), and the file's blob id now. A file edited and then reverted has its old
  blob id again, so its record is the old one again (or none). A file in neither is
  untracked unless `git check-ignore` says it is ignored (asked once a path, batched; an
  ignored new directory is not even watched);
- the status output is put together again in git's order (changes, then untracked files,
  each sorted by path bytes) and hashed with the changed files' contents as `git_state`
  hashes them. Each full measure checks that its own output is put together unchanged.

git measures in full again when the git directory changes (a commit, `git add`, checkout,
refs, the index) and when a record cannot be made without git: a rename, conflict, type
change or intent-to-add in it, a symlink, a tracked file that gitattributes or
core.autocrlf may filter, core.filemode=false. The watch is built again when the rules
change (a .gitignore, .gitattributes, a nested .git, the repository's config), a watched
directory moves, or the queue overflows. Without inotify (not Linux), past the watch limit,
with submodules or core.ignorecase, or with an index or ignore list too big to read, it logs
the reason once and asks git before every call, as `git_state` does.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import anyio
import anyio.to_thread

from runtime.guard.gitrecords import (
    Made,
    Need,
    Records,
    join_status,
    look,
    record_now,
    split_status,
)
from runtime.guard.gitstatus import (
    GIT_LOCATORS,
    GitSnapshot,
    HashCache,
    few_and_small,
    git_snapshot,
    git_state,
    hash_changed,
    outside_any_repository,
    parse_status,
    run_git,
)
from runtime.guard.inotify import MAX_WATCHES, Changes, Inotify, TreeWatch, WatchLimitError

log = logging.getLogger(__name__)
INDEX_OUTPUT_BYTES = 128 * 1024 * 1024  # `git ls-files -s` of ~1.5 million files
HASHES_KEPT = 65536
_GIT_VARIABLES = (*GIT_LOCATORS, "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY")


def _watch_dirs(
    tree: TreeWatch, folders: list[bytes]
) -> list[tuple[list[bytes], list[bytes]] | None]:
    return [tree.watch_dir(folder) for folder in folders]


def _watch_all(tree: TreeWatch, skip: list[bytes], git_dirs: set[bytes]) -> str | None:
    """Watch the work tree and the git directories (a worker thread's part of opening);
    "submodules" or "filters" when they rule the watch out or blob ids out, else None."""
    if os.path.lexists(tree.root + b"/.gitmodules"):
        return "submodules"
    files = tree.watch_tree(b"", skip)
    for git_dir in git_dirs:
        tree.watch_git(git_dir)
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    rules = [os.path.join(xdg, "git", "attributes")]
    rules += [os.path.join(os.fsdecode(d), "info", "attributes") for d in git_dirs]
    if any(os.path.basename(f) == b".gitattributes" for f in files):
        return "filters"
    return "filters" if any(os.path.exists(f) for f in rules) else None


class WatchedGit:
    """The git state of the repository holding `cwd`, kept current (see the module
    docstring). Owns an inotify descriptor: `close()` it."""

    def __init__(
        self, cwd: Path, *, max_watches: int = MAX_WATCHES, bookkeeping: tuple[str, ...] = ()
    ) -> None:
        self._cwd = cwd
        self._max_watches = max_watches
        self._bookkeeping = bookkeeping  # left out of the digest (GitSnapshot.bookkeeping)
        self._lock = anyio.Lock()
        self._off: str | None = None  # why git is asked every call instead
        self._tree: TreeWatch | None = None
        self._top = cwd
        self._exact_blobs = False
        self._status: tuple[bytes, Records] | None = None  # None: every call measures in full
        self._index: dict[bytes, bytes] | None = None  # path -> "tag mode oid stage"
        self._ignored: dict[bytes, bool] = {}
        self._hashes: HashCache = {}
        self._dirty: set[bytes] = set()
        self._due = True  # a full measure is due
        self._digest: str | None = None
        self.epoch = 0  # counts the watches made (or given up): events between are lost
        self._changed: set[str] = set()  # files with events not yet taken (absolute)

    @property
    def watching(self) -> bool:
        return self._tree is not None

    def take_changed(self) -> set[str]:
        """The files (absolute) with events since this was last taken."""
        changed, self._changed = self._changed, set()
        return changed

    def watches(self, path: str) -> bool:
        """Whether a change to the file at `path` (absolute, normalised) would be reported:
        its directory is watched and it is not a symlink (whose target may be elsewhere)."""
        tree, top = self._tree, str(self._top)
        folder = os.path.dirname(path)
        if tree is None or not (folder == top or folder.startswith(top + "/")):
            return False
        if os.fsencode(folder[len(top) + 1 :]) not in tree.watched:
            return False
        try:
            return not stat.S_ISLNK(os.lstat(path).st_mode)
        except OSError:
            return True  # gone: its making would be reported

    def close(self) -> None:
        self._off = self._off or "closed"
        if self._tree is not None:
            self._tree.close()
            self._tree = None

    async def state(self) -> str | None:
        async with self._lock:
            try:
                return await self._state()
            except (WatchLimitError, OSError) as exc:
                self._give_up(str(exc))
                return await git_state(self._cwd)

    async def _state(self) -> str | None:
        if self._off is None and self._tree is None:
            if outside_any_repository(self._cwd):
                return None
            await self._open()
        tree, top = self._tree, str(self._top)
        if self._off is not None or tree is None:
            return await git_state(self._cwd)
        changes = tree.changes()
        self._forget(top, changes.paths)  # at once: also when this measure is cancelled midway
        if not changes and not self._due:
            return self._digest  # nothing happened since the last answer
        in_full = self._due or changes.git or self._status is None
        self._due = True  # until this measure is done: one cancelled midway leaves a full one
        if changes.new_dirs and changes.rebuild is None:
            await self._watch_new(tree, changes)
        if changes.rebuild is not None:
            log.info("watching %s again: %s", self._top, changes.rebuild)
            tree.close()
            self._tree = None
            await self._open()  # then measured in full; what comes meanwhile, next time
            if self._off is not None or self._tree is None:
                return await git_state(self._cwd)
            return await self._measure_in_full()
        self._forget(top, changes.paths)  # with the files of new directories
        self._dirty |= changes.paths
        if in_full or self._status is None:
            return await self._measure_in_full()
        await self._update(self._status)
        return self._digest

    def _forget(self, top: str, paths: set[bytes]) -> None:
        """Changed files: their hashes are stale, here and in the file hasher (world.py)."""
        for path in paths:
            name = os.fsdecode(path)
            self._hashes.pop(name, None)
            self._changed.add(os.path.join(top, name))

    async def _watch_new(self, tree: TreeWatch, changes: Changes) -> None:
        """Watch the new directories that are not ignored, level by level; their files are
        changed paths. One that holds a `.git` or rules (.gitignore) means a rebuild."""
        pending = changes.new_dirs
        while pending and changes.rebuild is None:
            fresh = [d for d in pending if d not in tree.watched and d not in tree.skipped]
            if not await self._ask_ignored(fresh):
                changes.rebuild = "git check-ignore failed"
                return
            tree.skipped.update(d for d in fresh if self._ignored[d])
            keep = [d for d in fresh if not self._ignored[d]]
            found = await anyio.to_thread.run_sync(_watch_dirs, tree, keep)
            pending = []
            for folder, listing in zip(keep, found, strict=True):
                if listing is None:
                    if folder in tree.nested:
                        changes.rebuild = f"a repository appeared in {os.fsdecode(folder)}"
                    continue
                files, dirs = listing
                if any(os.path.basename(f) in (b".gitignore", b".gitattributes") for f in files):
                    changes.rebuild = f"rules appeared in {os.fsdecode(folder)}"
                changes.paths.update(files)
                pending += dirs

    async def _open(self) -> None:
        """Find the repository, read what decides how far events can be trusted, and watch;
        or give up with the reason. The full measure comes after the watches exist."""
        self._due = True
        self.epoch += 1
        if any(name in os.environ for name in _GIT_VARIABLES):
            self._give_up("a GIT_* variable points git at another directory or index")
            return
        found = await run_git(
            self._cwd,
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-dir",
            "--git-common-dir",
        )
        lines = b"" if found is None or found[0] != 0 else found[1]
        parts = lines.split(b"\n")
        if len(parts) < 3:
            self._give_up("git rev-parse did not find the repository")
            return
        top, git_dirs = parts[0], {parts[1], parts[2]}
        self._top = Path(os.fsdecode(top))
        exact_blobs = await self._settings()
        ignored = await run_git(
            self._top, "ls-files", "-z", "-o", "-i", "--exclude-standard", "--directory"
        )
        if exact_blobs is None:
            return
        if ignored is None or ignored[0] != 0 or ignored[2]:
            self._give_up("git could not list the ignored paths (or they are too many)")
            return
        listed = [p for p in ignored[1].split(b"\0") if p]
        self._ignored = {p.rstrip(b"/"): True for p in listed}
        skip = [p.rstrip(b"/") for p in listed if p.endswith(b"/")]
        notify = Inotify.open()
        if notify is None:
            self._give_up("inotify is not available")
            return
        tree = TreeWatch(notify, top, max_watches=self._max_watches)
        try:
            why_not = await anyio.to_thread.run_sync(_watch_all, tree, skip, git_dirs)
        except (WatchLimitError, OSError) as exc:
            why_not = str(exc)
        if why_not == "submodules":
            why_not = "the repository has submodules"
        if why_not is not None and why_not != "filters":
            tree.close()
            self._give_up(why_not)
            return
        self._exact_blobs = exact_blobs and why_not is None
        self._tree = tree

    async def _settings(self) -> bool | None:
        """Whether blob ids decide a tracked file's state as far as the configuration says
        (no autocrlf, no attributes file, modes count); None (after giving up) where events
        cannot be trusted at all."""
        found = await run_git(self._top, "config", "-z", "--list")
        if found is None or found[0] != 0:
            self._give_up("git config could not be read")
            return None
        config: dict[bytes, bytes] = {}
        for item in found[1].split(b"\0"):
            key, _, value = item.partition(b"\n")
            config[key.lower()] = value.lower()
        true = (b"true", b"yes", b"on", b"1", b"")
        if config.get(b"core.ignorecase", b"false") in true:
            self._give_up("core.ignorecase is set")
            return None
        return not (
            config.get(b"core.autocrlf", b"false") not in (b"false", b"no", b"off", b"0")
            or config.get(b"core.filemode", b"true") not in true
            or b"core.attributesfile" in config
        )

    def _give_up(self, reason: str) -> None:
        if self._off is None:
            log.warning(
                "the world probe asks git status before every call in %s: %s",
                self._cwd,
                reason,
            )
        self._off = reason
        self.epoch += 1
        if self._tree is not None:
            self._tree.close()
            self._tree = None

    async def _measure_in_full(self) -> str | None:
        self._due = True
        self._dirty.clear()
        if len(self._hashes) > HASHES_KEPT:
            self._hashes.clear()
        snapshot = await git_snapshot(self._top, self._hashes, bookkeeping=self._bookkeeping)
        self._due = snapshot is None
        self._index = None
        if snapshot is None:
            self._status = self._digest = None
            return None
        split = None if snapshot.truncated else split_status(snapshot.status)
        if split is not None and join_status(*split) != snapshot.status:
            split = None  # an order this module does not know: no shortcut for this state
        self._status = split
        for path, record in (split or (b"", {}))[1].items():
            if record[:1] == b"?":
                self._ignored[path] = False
        self._digest = snapshot.digest
        return self._digest

    async def _update(self, status: tuple[bytes, Records]) -> None:
        """Make the records of the changed paths without git, then the digest: one hop to a
        worker thread when nothing more is needed (the usual case)."""
        paths = sorted(self._dirty)
        inline = few_and_small(self._top / os.fsdecode(p) for p in paths)
        while True:
            if inline:
                made = self._refresh(paths, *status)  # a few small files: no thread hop
            else:
                made = await anyio.to_thread.run_sync(self._refresh, paths, *status)
            if made is None:
                return
            needs = {n for n in made.values() if isinstance(n, Need)}
            if Need.GIT in needs or (Need.INDEX in needs and not await self._read_index()):
                await self._measure_in_full()
                return
            unknown = [p for p, n in made.items() if n is Need.IGNORE]
            if not await self._ask_ignored(unknown):
                await self._measure_in_full()
                return

    def _refresh(
        self, paths: list[bytes], header: bytes, records: Records
    ) -> dict[bytes, Made] | None:
        """The records of `paths` now and the new digest (None); or the records as far as they
        could be made, when some need more first (nothing is changed then)."""
        made: dict[bytes, Made] = {}
        for path in paths:
            index = self._index
            made[path] = record_now(
                path,
                records.get(path),
                Need.INDEX if index is None else index.get(path),
                look(self._top, path),
                self._ignored.get(path),
                exact_blobs=self._exact_blobs,
            )
        if any(isinstance(record, Need) for record in made.values()):
            return made
        for path, record in made.items():
            if isinstance(record, bytes):
                records[path] = record
            else:
                records.pop(path, None)
        self._dirty.clear()
        self._due = False
        output = join_status(header, records)
        contents = hash_changed(self._top, parse_status(output).changed, self._hashes)
        self._digest = GitSnapshot(
            self._top, output, contents, bookkeeping=self._bookkeeping
        ).digest
        return None

    async def _read_index(self) -> bool:
        found = await run_git(self._top, "ls-files", "-z", "-s", "-v", limit=INDEX_OUTPUT_BYTES)
        if found is None or found[0] != 0:
            return False
        pairs = (item.partition(b"\t") for item in found[1].split(b"\0"))
        index = {path: entry for entry, _, path in pairs if path}
        gitlink = b" 160000 " in found[1]  # rare: then the entries say whether one is
        if gitlink and any(entry[1:9] == b" 160000 " for entry in index.values()):
            self._give_up("the repository has submodules")
            return False
        self._index = index
        return True

    async def _ask_ignored(self, paths: list[bytes]) -> bool:
        """Learn which of `paths` git ignores (one `git check-ignore` for all)."""
        unknown = [p for p in paths if p not in self._ignored]
        if not unknown:
            return True
        feed = b"".join(p + b"\0" for p in unknown)
        found = await run_git(self._top, "check-ignore", "-z", "--stdin", "--no-index", stdin=feed)
        if found is None or found[0] not in (0, 1) or found[2]:
            return False
        ignored = set(found[1].split(b"\0"))
        self._ignored.update((p, p in ignored) for p in unknown)
        return True
