"""`GitStore`: checkpoints as git trees in a private bare repository of the instance.

Layout, under `<instance>/checkpoints/`:

    git/                          a bare repository of our own (never the user's)
    git/mnemara-index/<area key>  one private index per area: its stat cache
    git/refs/mnemara/<n>/<key>    checkpoint n's tree of that area (a ref keeps it from gc)
    meta/<n>.json                 checkpoint n's record (records.py)

A checkpoint of an area runs git with `GIT_DIR` set to our repository, `GIT_WORK_TREE` to
the area and `GIT_INDEX_FILE` to the area's private index, so the user's own repository (its
index, HEAD, branches, stash, config, hooks) is never read or written, whether the area is a
git work tree or not. Three git processes per area, two when nothing changed:

1. `ls-files -t -o -m -d --exclude-standard`: what is new, changed or gone since the last
   checkpoint, by the index's stat cache, so only those files are read again. .gitignore
   files in the area are honoured (ignored build output is not checkpointed); every file
   that is not ignored is, tracked by the user's git or not. Nested repositories are left
   out. Excluded paths (mnemara's state, secrets) are never listed.
2. `update-index --add --remove --replace`: those files, and no others, hashed into the
   index (`git add` would refuse a path that vanished since step 1; this does not).
3. `write-tree`: the area's tree, mostly from the index's cached subtrees.

The ref is written as a loose ref file by us (one process less) and the record last; when
nothing was listed, the tree is the last one and step 3 is skipped too.

Bytes are kept exactly: the repository's `info/attributes`, which outranks any
.gitattributes, switches off end-of-line conversion, filters (LFS), `ident` and
working-tree encodings; the user's global and system git config is not read
(`GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM`), so no filter, hook or fsmonitor of
theirs runs. Git keeps a file's executable bit and a symlink's target, not other mode bits.

Why no alternates (borrowing the user's objects): their repository can drop an object we
point at (a `gc` after an amend) and a panel can write their `.git`; our own objects cost
disk space, not correctness.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from runtime.checkpoint.model import (
    MODES,
    TOO_MANY,
    AreaRecord,
    Changes,
    Checkpoint,
    CheckpointSettings,
    Entry,
    Files,
    Kind,
    StoreKind,
    area_key,
)
from runtime.checkpoint.plan import SAMPLE
from runtime.checkpoint.records import Records, write_private
from runtime.errors import CheckpointError

GIT_DIR = "git"
INDEX_DIR = "mnemara-index"
REFS = "refs/mnemara"
ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !eol\n"
# Loose objects in the repository (git's own estimate: one fan-out folder times 256) above
# which dropping checkpoints also packs the repository and deletes what none still holds.
LOOSE_OBJECTS_FOR_GC = 6_700
# Our repository's own settings: no automatic gc (drop() decides), refs never packed (drop()
# deletes them as files), no line-ending conversion, no reflog, symlinks kept as links.
SETTINGS = (
    ("gc.auto", "0"),
    ("gc.packRefs", "false"),
    ("core.autocrlf", "false"),
    ("core.logAllRefUpdates", "false"),
    ("core.symlinks", "true"),
)
TIMEOUT = 600.0  # a first checkpoint of a big area hashes every file


class GitStore:
    kind: StoreKind = "git"

    def __init__(self, root: Path, *, git: str | None = None) -> None:
        self.root = root
        self.repo = root / GIT_DIR
        self.records = Records(root / "meta")
        found = git or shutil.which("git")
        if found is None:
            raise CheckpointError(
                f"the checkpoints in {root} were taken with git, which is not installed here; "
                "install git to list or restore them",
                path=root,
            )
        self._git = found
        self._trees: dict[str, AreaRecord] = {}  # the last record of each area, by key
        # The tree this object last wrote from each area's index: the index is the same while
        # nothing is listed. (Not a record read from disk: a host killed between updating an
        # index and writing its record leaves an index ahead of the last record.)
        self._written: dict[str, str] = {}

    # -- running git ---------------------------------------------------------------------------

    def _env(
        self, area: Path | None, index: Path | None, *, literal: bool = False
    ) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(
            GIT_DIR=str(self.repo),
            GIT_CONFIG_NOSYSTEM="1",
            GIT_CONFIG_GLOBAL=os.devnull,
            GIT_TERMINAL_PROMPT="0",
            LC_ALL="C",
        )
        if area is not None:
            env["GIT_WORK_TREE"] = str(area)
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        if literal:
            env["GIT_LITERAL_PATHSPECS"] = "1"
        return env

    def _run(
        self,
        *args: str,
        area: Path | None = None,
        index: Path | None = None,
        data: bytes | None = None,
        literal: bool = False,
        ok: tuple[int, ...] = (0,),
    ) -> bytes:
        try:
            done = subprocess.run(
                [self._git, *args],
                cwd=area or self.repo,
                env=self._env(area, index, literal=literal),
                input=data,
                capture_output=True,
                timeout=TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git {args[0]} could not run: {exc}", path=self.repo) from None
        if done.returncode not in ok:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            why = said[-1] if said else f"exit status {done.returncode}"
            raise CheckpointError(f"git {args[0]} failed in {self.repo}: {why}", path=self.repo)
        return done.stdout

    def _ensure(self) -> None:
        if (self.repo / "HEAD").is_file():
            return
        self.root.mkdir(parents=True, exist_ok=True)
        os.chmod(self.root, 0o700)
        subprocess.run(
            [self._git, "init", "--bare", "--quiet", str(self.repo)],
            env=self._env(None, None),
            cwd=self.root,
            capture_output=True,
            check=False,
        )
        if not (self.repo / "HEAD").is_file():
            raise CheckpointError(f"could not make the checkpoint repository {self.repo}",
                                  path=self.repo)  # fmt: skip
        (self.repo / "info").mkdir(exist_ok=True)
        (self.repo / "info" / "attributes").write_text(ATTRIBUTES, encoding="ascii")
        for key, value in SETTINGS:
            self._run("config", key, value)

    # -- taking --------------------------------------------------------------------------------

    def take(
        self,
        areas: Sequence[Path],
        *,
        kind: Kind,
        settings: CheckpointSettings,
        exclude: Collection[Path] = (),
        turn: int | None = None,
        note: str = "",
    ) -> Checkpoint:
        started = time.perf_counter()
        self._ensure()
        number = self.records.next_number()
        if not self._trees:
            self._remember(self.records.read_all())
        recorded = tuple(self._take_area(a, number, settings, exclude) for a in areas)
        checkpoint = self.records.record(
            number, started, store="git", areas=recorded, kind=kind, exclude=exclude,
            turn=turn, note=note,
        )  # fmt: skip
        self._remember([checkpoint])
        return checkpoint

    def _remember(self, checkpoints: Sequence[Checkpoint]) -> None:
        for checkpoint in checkpoints:
            for area in checkpoint.recorded():
                self._trees[area.key] = area

    def _take_area(
        self, area: Path, number: int, settings: CheckpointSettings, exclude: Collection[Path]
    ) -> AreaRecord:
        key = area_key(area)
        if not area.is_dir():
            return AreaRecord(str(area), key, skipped="not a directory now")
        index = self.repo / INDEX_DIR / key
        index.parent.mkdir(exist_ok=True)
        # Only the instance's lease holder writes here, one checkpoint at a time, so a lock
        # file is what a killed host left behind (kill -9 mid-update): git would refuse
        # every later checkpoint while it stays.
        Path(f"{index}.lock").unlink(missing_ok=True)
        skip = [f":(exclude,literal){rel}" for rel in _inside(area, exclude)]
        listed = self._run("ls-files", "-z", "-t", "-o", "-m", "-d", "--exclude-standard",
                           "--", ".", *skip, area=area, index=index)  # fmt: skip
        tags = _tags(listed)
        if len(tags) > settings.max_files:
            return AreaRecord(str(area), key, skipped=(
                f"{TOO_MANY}: {len(tags)} new or changed at once, over max_files "
                f"({settings.max_files}); is this the right working directory?"))  # fmt: skip
        update, capped, forget = _sort_out(area, tags, settings.max_file_bytes)
        if update or forget:
            self._written.pop(key, None)  # the index changes (even if git fails half way)
        if forget:  # first: a file that became a folder goes before the folder's files come
            self._run("update-index", "--force-remove", "-z", "--stdin",
                      area=area, index=index, data=_nul(forget))  # fmt: skip
        if update:
            self._run("update-index", "--add", "--remove", "--replace", "-z", "--stdin",
                      area=area, index=index, data=_nul(update))  # fmt: skip
        before = self._trees.get(key)
        if not (update or forget) and key in self._written:
            tree = self._written[key]  # nothing listed: the index, so its tree, is as it was
        else:
            tree = self._run("write-tree", area=area, index=index).decode().strip()
            self._written[key] = tree
        ref = self.repo / REFS / str(number) / key
        ref.parent.mkdir(parents=True, exist_ok=True)
        write_private(ref, f"{tree}\n".encode())
        same = before is not None and before.tree == tree
        changes = Changes() if same else _changes(tags, update, forget)
        files = (before.files if before is not None else 0) + changes.added - changes.removed
        return AreaRecord(str(area), key, tree=tree, files=max(files, 0), changes=changes,
                          capped=tuple(sorted(capped)))  # fmt: skip

    # -- reading -------------------------------------------------------------------------------

    def checkpoints(self) -> list[Checkpoint]:
        return self.records.read_all()

    def files(self, checkpoint: Checkpoint) -> dict[str, Files]:
        found: dict[str, Files] = {}
        for area in checkpoint.recorded():
            listed = self._run("ls-tree", "-r", "-z", "--full-tree", area.tree)
            found[area.path] = _parse_tree(listed)
        return found

    @contextmanager
    def reader(self) -> Iterator[_BlobReader]:
        with subprocess.Popen(
            [self._git, "cat-file", "--batch"],
            cwd=self.repo,
            env=self._env(None, None),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        ) as process:
            assert process.stdin is not None and process.stdout is not None
            try:
                yield _BlobReader(process.stdin, process.stdout, self.repo)
            finally:
                process.stdin.close()
                process.wait(timeout=30)

    def ignored(self, area: Path, paths: Sequence[str]) -> set[str]:
        if not paths:
            return set()
        found = self._run("check-ignore", "--no-index", "-z", "--stdin", area=area,
                          data=_nul(paths), ok=(0, 1))  # fmt: skip
        return {os.fsdecode(p) for p in found.split(b"\0") if p}

    # -- dropping ------------------------------------------------------------------------------

    def drop(self, numbers: Collection[int]) -> None:
        """The checkpoints' records, then their refs: loose ref files, deleted as files (no
        git process; `gc.packRefs` is off, so a ref is never packed). Now and then, when
        loose objects pile up, a gc deletes what no kept checkpoint holds."""
        if not numbers:
            return
        self.records.remove(numbers)
        for number in numbers:
            folder = self.repo / REFS / str(number)
            if folder.is_dir():
                for ref in folder.iterdir():
                    ref.unlink(missing_ok=True)
                folder.rmdir()
        if self._loose_objects() > LOOSE_OBJECTS_FOR_GC:
            kept = {str(c.number) for c in self.records.read_all()}
            for folder in (self.repo / REFS).iterdir():  # refs a crash left without a record
                if folder.name not in kept:
                    shutil.rmtree(folder, ignore_errors=True)
            self._run("gc", "--prune=now", "--quiet")

    def _loose_objects(self) -> int:
        try:
            return len(os.listdir(self.repo / "objects" / "17")) * 256
        except FileNotFoundError:
            return 0


class _BlobReader:
    """`git cat-file --batch`, asked one id at a time."""

    def __init__(self, ask: IO[bytes], answers: IO[bytes], repo: Path) -> None:
        self._ask, self._answers, self._repo = ask, answers, repo

    def __call__(self, blob: str) -> bytes:
        self._ask.write(f"{blob}\n".encode())
        self._ask.flush()
        header = self._answers.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            raise CheckpointError(f"the checkpoint repository {self._repo} lacks blob {blob}; "
                                  "it may be damaged", path=self._repo)  # fmt: skip
        size = int(header[2])
        data = self._answers.read(size + 1)
        return data[:size]


def _inside(area: Path, exclude: Collection[Path]) -> list[str]:
    """The excluded paths inside `area`, relative to it."""
    found = []
    for path in exclude:
        try:
            rel = path.relative_to(area)
        except ValueError:
            continue
        if rel.parts:
            found.append(rel.as_posix())
    return found


def _tags(listed: bytes) -> dict[str, set[str]]:
    """`ls-files -t -z` output as path -> tags (`?` new, `C` changed, `R` gone). A nested
    repository is listed as a folder (`sub/`) and left out."""
    tags: dict[str, set[str]] = {}
    for item in listed.split(b"\0"):
        if len(item) < 3 or item.endswith(b"/"):
            continue
        path = os.fsdecode(item[2:])
        tags.setdefault(path, set()).add(chr(item[0]))
    return tags


def _sort_out(
    area: Path, tags: Mapping[str, set[str]], max_bytes: int
) -> tuple[list[str], list[str], list[str]]:
    """(paths to hash into the index, paths too big to keep, paths the index must forget:
    gone, now a folder, now beyond a link, or too big)."""
    update: list[str] = []
    capped: list[str] = []
    forget: list[str] = []
    links: dict[str, bool] = {}
    for path, tag in tags.items():
        try:
            st = None if _beyond_link(area, path, links) else os.lstat(area / path)
        except (FileNotFoundError, NotADirectoryError):
            st = None
        if st is None or stat.S_ISDIR(st.st_mode):
            if "?" not in tag:
                forget.append(path)
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > max_bytes:
            capped.append(path)
            if "?" not in tag:
                forget.append(path)
            continue
        update.append(path)
    return update, capped, forget


def _beyond_link(area: Path, path: str, seen: dict[str, bool]) -> bool:
    """True when a folder on the way to `path` is a symbolic link (git will not follow it)."""
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        folder = "/".join(parts[:depth])
        if folder not in seen:
            try:
                seen[folder] = stat.S_ISLNK(os.lstat(area / folder).st_mode)
            except OSError:
                seen[folder] = False
        if seen[folder]:
            return True
    return False


def _changes(tags: Mapping[str, set[str]], update: Sequence[str], forget: Sequence[str]) -> Changes:
    """Counts from what was listed: new files added, tracked ones changed, forgotten ones
    removed (a file grown past the size cap leaves the checkpoint too)."""
    added = sum(1 for p in update if "?" in tags[p])
    touched = sorted([*update, *forget])[:SAMPLE]
    return Changes(added, len(update) - added, len(forget), tuple(touched))


def _nul(paths: Sequence[str]) -> bytes:
    return b"\0".join(os.fsencode(p) for p in paths)


def _parse_tree(listed: bytes) -> dict[str, Entry]:
    files: dict[str, Entry] = {}
    for item in listed.split(b"\0"):
        if not item:
            continue
        head, _, path = item.partition(b"\t")
        mode, kind, blob = head.split()
        if kind != b"blob" or int(mode, 8) not in MODES:
            continue  # a nested repository (commit) is not ours to restore
        files[os.fsdecode(path)] = Entry(int(mode, 8), blob.decode())
    return files
