"""Shell command parsing: a strict subset of the POSIX shell grammar, everything else refused.

The policy must know exactly which programs a command runs. This parser recognises simple
commands joined by `;`, `&&`, `||`, `|` and newlines, with words built from plain characters,
single quotes, double quotes without expansions, and backslash escapes, plus the file
redirections. Anything that could make the shell run something the text does not show
plainly (`$`, backticks, parentheses, braces, here-documents, background jobs, comments,
control or invisible characters, shell keywords) makes the command Unparseable, and an
unparseable command is asked about, never allowed.

Why not a library: bashlex is GPL-3.0 and stops at `case` or `$((..))`; tree-sitter-bash is
error-tolerant by design (it always returns a tree). Either way the walk that decides "is this
word exactly what runs" would be ours; a small grammar that refuses what it does not know
keeps the whole argument in one place.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from runtime.policy.display import is_hidden_character

# Words that open or continue a compound command; as a command name they mean syntax we do
# not follow (`if`, `for`, `while`, `case`, `function`, `time`, `coproc`, `!`, `[[`).
RESERVED = frozenset(
    {
        "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until",
        "do", "done", "in", "function", "time", "coproc", "!", "[[", "]]", "{", "}",
    }
)  # fmt: skip
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")
_GLOB = frozenset("*?[]")
_NAME_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})


@dataclass(frozen=True)
class Word:
    """One word after quote removal. `canonical` re-quotes it so no two words render alike."""

    value: str
    canonical: str
    quoted: bool = False  # quotes, backslashes or line continuations were used
    glob: bool = False  # an unquoted *, ?, [ or ]
    tilde: bool = False  # an unquoted ~ that the shell would expand
    assignment: bool = False  # NAME=value, the name unquoted


@dataclass(frozen=True)
class Redirect:
    fd: str  # "" for the operator's default descriptor
    op: str
    target: Word | None = None  # the file; None for a descriptor copy or close
    dup: str = ""  # `1` in `2>&1`, `-` in `>&-`

    @property
    def writes(self) -> bool:
        return self.op in WRITE_OPS or (self.op == ">&" and self.target is not None)

    @property
    def canonical(self) -> str:
        return f"{self.fd}{self.op}{self.target.canonical if self.target else self.dup}"


@dataclass(frozen=True)
class SimpleCommand:
    assignments: tuple[Word, ...] = ()
    words: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()

    @property
    def canonical(self) -> str:
        """The one spelling that allow-patterns match: words, then redirections, one space."""
        parts = [w.canonical for w in (*self.assignments, *self.words)]
        return " ".join(parts + [r.canonical for r in self.redirects])


@dataclass(frozen=True)
class Script:
    commands: tuple[SimpleCommand, ...]


@dataclass(frozen=True)
class Unparseable:
    reason: str


def parse_command(text: str) -> Script | Unparseable:
    """Split `text` into simple commands, or say why it is outside the subset we accept."""
    hidden = next((ch for ch in text if ch not in "\t\n" and is_hidden_character(ch)), None)
    if hidden is not None:
        return Unparseable(f"contains a control or invisible character (U+{ord(hidden):04X})")
    try:
        tokens = _Lexer(text).run()
        commands = _group(tokens)
    except _Refused as exc:
        return Unparseable(str(exc))
    if not commands:
        return Unparseable("empty command")
    return Script(commands)


class _Refused(Exception):
    """Internal: the input leaves the subset; the message says where."""


_Token = Word | Redirect | str


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.tokens: list[_Token] = []
        self.chars: list[tuple[str, bool]] = []  # (character, was it quoted)
        self.started = False
        self.escaped = False
        self.pending: tuple[str, str] | None = None  # a redirection waiting for its target

    def run(self) -> list[_Token]:
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            nxt = text[self.i + 1 : self.i + 2]
            if ch in " \t":
                self.finish()
                self.i += 1
            elif ch in "\n;&|":
                self.operator(ch, nxt)
            elif ch in "<>":
                self.redirect(ch, nxt)
            elif ch in "(){}":
                raise _Refused(f"`{ch}` (a subshell, group, brace expansion or substitution)")
            elif ch == "$":
                raise _Refused("`$` (a variable, command or arithmetic expansion)")
            elif ch == "`":
                raise _Refused("a backtick command substitution")
            elif ch == "#" and not self.started:
                raise _Refused("a `#` comment")
            elif ch == "\\":
                self.backslash(nxt)
            elif ch == "'":
                self.single_quoted()
            elif ch == '"':
                self.double_quoted()
            else:
                self.add(ch, quoted=False)
                self.i += 1
        self.finish()
        if self.pending:
            raise _Refused("a redirection without a target")
        return self.tokens

    def add(self, ch: str, *, quoted: bool) -> None:
        self.chars.append((ch, quoted))
        self.started = True

    def operator(self, ch: str, nxt: str) -> None:
        self.finish()
        if self.pending:
            raise _Refused("a redirection without a target")
        if ch == "&" and nxt == ">":
            self.i += 1
            self.redirect_op("", "&>>" if self.text.startswith(">>", self.i) else "&>")
            return
        if ch == "&" and nxt != "&":
            raise _Refused("`&` (a background job)")
        if ch == ";" and nxt == ";":
            raise _Refused("`;;` (case syntax)")
        double = ch in "&|" and nxt == ch
        self.tokens.append(ch * 2 if double else ch)
        # `|&` pipes stderr too; for the policy it is a pipe like any other.
        self.i += 2 if double or (ch == "|" and nxt == "&") else 1

    def redirect(self, ch: str, nxt: str) -> None:
        fd = ""
        if self.started and all(c.isdigit() and not q for c, q in self.chars):
            fd = "".join(c for c, _ in self.chars)
            self.chars, self.started = [], False
        else:
            self.finish()
        if self.pending:
            raise _Refused("a redirection without a target")
        if ch == "<" and nxt == "<":
            raise _Refused("a here-document or here-string")
        if nxt == "(":
            raise _Refused("process substitution")
        two = ch + nxt
        if two in ("<&", "<>", ">>", ">|", ">&"):
            self.redirect_op(fd, two)
        else:
            self.redirect_op(fd, ch)

    def redirect_op(self, fd: str, op: str) -> None:
        self.i += len(op) - (1 if op.startswith("&") else 0)
        self.pending = (fd, op)

    def backslash(self, nxt: str) -> None:
        if not nxt:
            raise _Refused("a trailing backslash")
        # A line continuation (backslash-newline) vanishes and the word goes on after it; it
        # still marks the word as escaped, since `r\<newline>m` is a way to spell `rm`.
        if nxt != "\n":
            self.add(nxt, quoted=True)
        self.escaped = True
        self.i += 2

    def single_quoted(self) -> None:
        end = self.text.find("'", self.i + 1)
        if end < 0:
            raise _Refused("an unterminated single quote")
        for ch in self.text[self.i + 1 : end]:
            self.add(ch, quoted=True)
        self.started = self.escaped = True
        self.i = end + 1

    def double_quoted(self) -> None:
        j = self.i + 1
        text = self.text
        while j < len(text) and text[j] != '"':
            ch = text[j]
            if ch in "$`":
                raise _Refused(f"`{ch}` inside double quotes (an expansion)")
            if ch == "\\" and text[j + 1 : j + 2] in ("$", "`", '"', "\\", "\n"):
                if text[j + 1] != "\n":
                    self.add(text[j + 1], quoted=True)
                j += 2
                continue
            self.add(ch, quoted=True)
            j += 1
        if j >= len(text):
            raise _Refused("an unterminated double quote")
        self.started = self.escaped = True
        self.i = j + 1

    def finish(self) -> None:
        if not self.started:
            return
        word = _make_word(self.chars, quoted=self.escaped)
        self.chars, self.started, self.escaped = [], False, False
        if self.pending is None:
            self.tokens.append(word)
            return
        fd, op = self.pending
        self.pending = None
        if op in (">&", "<&") and not word.quoted and (word.value.isdigit() or word.value == "-"):
            self.tokens.append(Redirect(fd, op, dup=word.value))
        elif op == "<&" or (op == ">&" and fd):
            raise _Refused(f"`{op}` with a non-descriptor target")
        else:
            self.tokens.append(Redirect(fd, op, target=word))


def _make_word(chars: list[tuple[str, bool]], *, quoted: bool) -> Word:
    value = "".join(c for c, _ in chars)
    name_len = 0
    while name_len < len(chars) and chars[name_len][0] in _NAME_CHARS and not chars[name_len][1]:
        name_len += 1
    is_assignment = (
        0 < name_len < len(chars) and chars[0][0] in _NAME_START and chars[name_len] == ("=", False)
    )
    active: list[bool] = []
    for i, (ch, was_quoted) in enumerate(chars):
        # Tilde expands at the start of a word, and after `=` or `:` in assignment words.
        after_separator = is_assignment and i > 0 and chars[i - 1] in (("=", False), (":", False))
        tilde_here = ch == "~" and (i == 0 or after_separator)
        active.append(not was_quoted and (ch in _GLOB or tilde_here))
    if any(active):
        canonical = "".join(
            ch if on or ch in _SAFE else ("'\n'" if ch == "\n" else "\\" + ch)
            for (ch, _), on in zip(chars, active, strict=True)
        )
    else:
        canonical = shlex.quote(value)
    return Word(
        value=value,
        canonical=canonical,
        quoted=quoted or any(q for _, q in chars),
        glob=any(on and ch in _GLOB for (ch, _), on in zip(chars, active, strict=True)),
        tilde=any(on and ch == "~" for (ch, _), on in zip(chars, active, strict=True)),
        assignment=is_assignment,
    )


def _group(tokens: list[_Token]) -> tuple[SimpleCommand, ...]:
    commands: list[SimpleCommand] = []
    assignments: list[Word] = []
    words: list[Word] = []
    redirects: list[Redirect] = []
    last_op = "\n"
    for token in tokens:
        if isinstance(token, str):
            if words or assignments or redirects:
                commands.append(SimpleCommand(tuple(assignments), tuple(words), tuple(redirects)))
                assignments, words, redirects = [], [], []
            elif token != "\n" or last_op not in ("\n", ";"):
                raise _Refused(f"`{token.strip()}` with no command before it")
            last_op = token
        elif isinstance(token, Redirect):
            redirects.append(token)
        elif token.assignment and not words:
            assignments.append(token)
        else:
            if not words and not token.quoted and token.value in RESERVED:
                raise _Refused(f"the shell keyword `{token.value}`")
            words.append(token)
    if words or assignments or redirects:
        commands.append(SimpleCommand(tuple(assignments), tuple(words), tuple(redirects)))
    elif last_op in ("&&", "||", "|"):
        raise _Refused(f"`{last_op}` with no command after it")
    return tuple(commands)
