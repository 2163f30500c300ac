"""The lexer of the Relay text format (docs/architecture.md#text).

One compiled master regular expression with named groups cuts the text into
tokens; the result is a :class:`Tokens` object holding three parallel lists
(kind, raw text, start offset) plus a bracket-matching table, which keeps
the per-token cost low (no token objects) and lets the parser jump over a
balanced ``{ ... }`` in O(1).

Token kinds
-----------
* ``LOCAL`` ``%x`` / ``%0`` (a name may contain dotted segments that start
  with a letter, ``%conv1.weight``; ``%x.0`` is ``%x`` then a projection; as
  in TVM, ``/`` is a name character when a letter, digit or ``_`` follows it,
  ``%base/x``, so ``%a / %b`` and ``%a/%b`` still divide), ``GLOBAL`` ``@f``
  (the same shape after a letter), ``IDENT`` (operator names may be dotted: ``nn.conv2d``),
  ``NUM`` (a numeric literal with its suffix, also ``inff``/``nanf16``...),
  ``STR`` (a double-quoted string with its quotes), ``PROJ`` (``.0``),
  ``VERSION`` (the ``#[version = "..."]`` header; :func:`version_of` reads it),
  ``EOF``.
* Keywords (``def fn let if else match type free_var ref ref_read ref_write
  grad extern meta``) and punctuation have their own text as their kind.
* ``#[metadata]`` ends the token stream: the rest of the text is the
  metadata payload (:attr:`Tokens.metadata`, with its offset).

Comments (``// ...`` to the end of the line, ``/* ... */`` nested as TVM
nests them, including TVM's ``/* ty=... */`` annotations) and whitespace are
skipped. Positions are character offsets; :meth:`Tokens.span` turns a token
range into a 1-based :class:`~semantics.span.Span` by bisecting the
line-start table, so nothing is computed for tokens that never need a span.

Errors (unterminated strings and comments, unexpected characters, unbalanced
brackets, a malformed ``#[...]``) are :class:`~semantics.errors.ParseError`
with the offending position.
"""

from __future__ import annotations

import bisect
import functools
import re

from semantics.errors import ParseError
from semantics.span import Source, Span

KEYWORDS = frozenset({
    "def", "fn", "let", "if", "else", "match", "type", "free_var", "ref", "ref_read",
    "ref_write", "grad", "extern", "meta",
})

_OPEN = {"(": ")", "[": "]", "{": "}"}
_CLOSE = {")": "(", "]": "[", "}": "{"}

# Each match consumes leading trivia (whitespace, `//` comments, un-nested `/* */` comments)
# and then one token; `bcomment` catches a nested or unterminated comment for the slow path.
_MASTER = re.compile(r"""
  (?:[ \t\r\n]+|//[^\n]*|/\*(?:[^*/]|\*(?!/)|/(?!\*))*\*/)*
  (?:
    (?P<LOCAL>%[A-Za-z0-9_]\w*(?:/\w+)*(?:\.[A-Za-z_]\w*(?:/\w+)*)*)
  | (?P<GLOBAL>@[A-Za-z_]\w*(?:/\w+)*(?:\.[A-Za-z_]\w*(?:/\w+)*)*)
  | (?P<PROJ>\.[0-9]+)
  | (?P<SPECIAL>(?:inf|nan)f(?:16|32|64)?(?!\w))
  | (?P<NUM>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\w*)
  | (?P<IDENT>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)
  | (?P<STR>"(?:[^"\\\n]|\\[^\n])*")
  | (?P<bcomment>/\*)
  | (?P<punct>->|=>|==|!=|<=|>=|&&|\|\||:=|[-+*/%()\[\]{},;:=<>!?.])
  | (?P<hash>\#)
  | (?P<end>\Z)
  | (?P<bad>.)
  )
""", re.VERBOSE | re.ASCII | re.DOTALL)

# Token kind by group number: None for IDENT, "" for punctuation (kind = text), "slow" for
# the groups handled by _slow_token, "end" at the end of the text.
_SIMPLE_KIND: dict[int, str | None] = {
    _MASTER.groupindex[name]: kind for name, kind in (
        ("LOCAL", "LOCAL"), ("GLOBAL", "GLOBAL"), ("PROJ", "PROJ"), ("SPECIAL", "NUM"),
        ("NUM", "NUM"), ("IDENT", None), ("STR", "STR"), ("bcomment", "slow"), ("punct", ""),
        ("hash", "slow"), ("end", "end"), ("bad", "slow"))}

_VERSION = re.compile(r'\#\[\s*version\s*=\s*"([^"\n]*)"\s*\]', re.ASCII)
_METADATA = re.compile(r"\#\[\s*metadata\s*\]", re.ASCII)
_COMMENT_MARK = re.compile(r"/\*|\*/")


_bisect_right = bisect.bisect_right
_new_object = object.__new__
_SPAN_SLOTS = tuple(Span.__dict__[f].__set__ for f in
                    ("source", "line", "column", "end_line", "end_column", "text"))


def _make_span(source: str, line: int, column: int, end_line: int, end_column: int,
               text: Source) -> Span:
    """``Span(...)`` without the frozen-dataclass ``__init__`` (half the cost; same object)."""
    span = _new_object(Span)
    set_source, set_line, set_column, set_end_line, set_end_column, set_text = _SPAN_SLOTS
    set_source(span, source)
    set_line(span, line)
    set_column(span, column)
    set_end_line(span, end_line)
    set_end_column(span, end_column)
    set_text(span, text)
    return span


class Tokens:
    """The token stream of one source text.

    Invariants: ``kinds``, ``texts`` and ``starts`` have equal length and end
    with at least four ``EOF`` tokens (so the parser may look ahead without
    bounds checks); ``match[i]`` is the index of the bracket matching the
    bracket at ``i`` (-1 for non-brackets).
    """

    __slots__ = ("source", "kinds", "texts", "starts", "match", "line_starts", "metadata",
                 "metadata_offset")

    def __init__(self, source: Source):
        self.source = source
        self.kinds: list[str] = []
        self.texts: list[str] = []
        self.starts: list[int] = []
        self.match: list[int] = []
        self.line_starts: list[int] = [0]
        self.metadata: str | None = None
        self.metadata_offset = 0

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based (line, column) of a character offset."""
        line = bisect.bisect_right(self.line_starts, offset)
        return line, offset - self.line_starts[line - 1] + 1

    def span_offsets(self, start: int, end: int) -> Span:
        """The span of the characters ``start .. end`` (end exclusive)."""
        line_starts = self.line_starts
        line = _bisect_right(line_starts, start)
        end_line = line
        if line < len(line_starts) and line_starts[line] <= end:
            end_line = _bisect_right(line_starts, end)
        return _make_span(self.source.name, line, start - line_starts[line - 1] + 1,
                          end_line, end - line_starts[end_line - 1] + 1, self.source)

    def span(self, first: int, last: int | None = None) -> Span:
        """The span from the start of token ``first`` to the end of token ``last``."""
        starts = self.starts
        start = starts[first]
        if last is None:
            last = first
        end = starts[last] + len(self.texts[last])
        if end < start:
            end = start
        line_starts = self.line_starts
        line = _bisect_right(line_starts, start)
        end_line = line
        if line < len(line_starts) and line_starts[line] <= end:
            end_line = _bisect_right(line_starts, end)
        span = _new_object(Span)
        set_source, set_line, set_column, set_end_line, set_end_column, set_text = _SPAN_SLOTS
        source = self.source
        set_source(span, source.name)
        set_line(span, line)
        set_column(span, start - line_starts[line - 1] + 1)
        set_end_line(span, end_line)
        set_end_column(span, end - line_starts[end_line - 1] + 1)
        set_text(span, source)
        return span

    def describe(self, i: int) -> str:
        """How an error message names token ``i``: ```text``` or ``end of input``."""
        kind = self.kinds[i]
        if kind == "EOF":
            return "end of input"
        if kind == "VERSION":
            return "the `#[version = ...]` header"
        text = self.texts[i]
        if len(text) > 40:
            text = text[:37] + "..."
        return f"`{text}`"


def tokenize(text: str, source_name: str = "<string>") -> Tokens:
    """Cut ``text`` into tokens.

    Args:
        text: the program text.
        source_name: the file name used in spans.
    Returns:
        The :class:`Tokens` (comments and whitespace dropped).
    Raises:
        ParseError: an unexpected character, an unterminated string or
            comment, a malformed ``#[...]`` or unbalanced brackets.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    source = Source(source_name, text)
    toks = Tokens(source)
    line_starts = toks.line_starts
    for m in re.finditer("\n", text):
        line_starts.append(m.end())
    kinds, texts, starts = toks.kinds, toks.texts, toks.starts
    kinds_append, texts_append, starts_append = kinds.append, texts.append, starts.append
    keywords = KEYWORDS
    simple_kind = _SIMPLE_KIND
    opening, closing = _OPEN, _CLOSE
    brackets: list[int] = []   # indices of the open brackets not closed yet
    pairs: list[tuple[int, int]] = []
    pos = 0
    n = len(text)
    while pos <= n:
        resume = -1
        for m in _MASTER.finditer(text, pos):
            index: int = m.lastindex  # type: ignore[assignment]  # one group always matches
            raw = m[index]
            kind = simple_kind[index]
            if kind is None:    # IDENT: keyword or name
                kinds_append(raw if raw in keywords else "IDENT")
            elif kind == "":    # punctuation: its text is its kind
                kinds_append(raw)
                if raw in opening:
                    brackets.append(len(kinds) - 1)
                elif raw in closing:
                    _close_bracket(toks, brackets, pairs, len(kinds) - 1, m.start(index))
            elif kind == "end":
                break
            elif kind == "slow":
                resume = _slow_token(toks, text, m.start(index), m.lastgroup)
                break
            else:
                kinds_append(kind)
            texts_append(raw)
            starts_append(m.start(index))
        if resume < 0:
            break
        pos = resume
    eof = len(text) if toks.metadata is None else toks.metadata_offset
    for _ in range(4):
        kinds_append("EOF")
        texts_append("")
        starts_append(eof)
    if brackets:
        j = brackets[-1]
        raise ParseError(f"unclosed `{kinds[j]}`: no matching `{_OPEN[kinds[j]]}`",
                         toks.span(j))
    match = [-1] * len(kinds)
    for a, b in pairs:
        match[a] = b
        match[b] = a
    toks.match = match
    return toks


def _close_bracket(toks: Tokens, brackets: list[int], pairs: list[tuple[int, int]], i: int,
                   offset: int) -> None:
    """Match the closing bracket at token ``i`` (at ``offset``) with the innermost open one."""
    kind = toks.kinds[i]
    if not brackets:
        raise ParseError(f"unbalanced `{kind}`: no opening `{_CLOSE[kind]}`",
                         toks.span_offsets(offset, offset + 1))
    j = brackets.pop()
    opener = toks.kinds[j]
    if _OPEN[opener] != kind:
        line, col = toks.position(toks.starts[j])
        raise ParseError(f"expected `{_OPEN[opener]}` to close `{opener}` opened at {line}:{col}, "
                         f"found `{kind}`", toks.span_offsets(offset, offset + 1))
    pairs.append((j, i))


def version_of(raw: str) -> str:
    """The version string of a ``VERSION`` token's text (``#[version = "0.0.5"]`` -> ``0.0.5``)."""
    m = _VERSION.match(raw)
    return m.group(1) if m is not None else ""


def _slow_token(toks: Tokens, text: str, pos: int, group: str | None) -> int:
    """Handle a nested comment or a ``#[...]`` at ``pos``; returns where lexing resumes
    (``len(text) + 1`` when the metadata section ends the tokens)."""
    if group == "bcomment":
        return _skip_block_comment(toks, text, pos)
    if group == "hash":
        version = _VERSION.match(text, pos)
        if version is not None:
            toks.kinds.append("VERSION")
            toks.texts.append(version.group(0))
            toks.starts.append(pos)
            return version.end()
        meta = _METADATA.match(text, pos)
        if meta is not None:
            toks.metadata = text[meta.end():]
            toks.metadata_offset = meta.end()
            return len(text) + 1
        raise ParseError("expected `#[version = \"...\"]` or `#[metadata]` after `#`",
                         toks.span_offsets(pos, pos + 1))
    raise _bad_character(toks, text, pos)


def _skip_block_comment(toks: Tokens, text: str, start: int) -> int:
    """The offset after the (possibly nested) ``/* ... */`` comment that opens at ``start``."""
    depth = 0
    pos = start
    while True:
        m = _COMMENT_MARK.search(text, pos)
        if m is None:
            raise ParseError("unterminated comment: `/*` has no matching `*/`",
                             toks.span_offsets(start, start + 2))
        if m.group() == "/*":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return m.end()
        pos = m.end()


def _bad_character(toks: Tokens, text: str, pos: int) -> ParseError:
    ch = text[pos]
    span = toks.span_offsets(pos, pos + 1)
    if ch == '"':
        newline = text.find("\n", pos)
        if newline == -1:
            return ParseError("unterminated string literal", span)
        body = text[pos:newline]
        if body.endswith("\\") or '"' not in body[1:]:
            return ParseError("unterminated string literal (strings end on the same line)", span)
        return ParseError("malformed string literal", span)
    if ch == "%":
        return ParseError("expected a name after `%` (such as `%x` or `%0`)", span)
    if ch == "@":
        return ParseError("expected a name after `@` (such as `@main`)", span)
    if ch == "&":
        return ParseError("unexpected character `&` (did you mean `&&`?)", span)
    if ch == "|":
        return ParseError("unexpected character `|` (did you mean `||`?)", span)
    if ch.isprintable():
        return ParseError(f"unexpected character `{ch}`", span)
    return ParseError(f"unexpected character U+{ord(ch):04X}", span)


# --- literal decoding ------------------------------------------------------------------------

_NUMBER = re.compile(r"([0-9]+)(\.[0-9]+)?([eE][+-]?[0-9]+)?(\w*)\Z", re.ASCII)
_SPECIAL_FLOAT = re.compile(r"(inf|nan)(f(?:16|32|64)?)\Z")
_MAX_LITERAL_CHARS = 400
_INT_RANGE = {
    **{f"int{b}": (-(1 << (b - 1)), (1 << (b - 1)) - 1) for b in (8, 16, 32, 64)},
    **{f"uint{b}": (0, (1 << b) - 1) for b in (8, 16, 32, 64)},
}
_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}
_ESCAPE = re.compile(r"\\(u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|.)", re.DOTALL)


def decode_number(raw: str, negative: bool = False, *,
                  check_range: bool = True) -> tuple[int | float, str]:
    """The value and dtype of a ``NUM`` token (``negative`` when a unary minus was folded in).

    As in TVM's text format: an unsuffixed integer is int32, or int64 when its value does
    not fit int32 (``2147483648``); ``1.5``/``1e5`` are float32; the suffixes ``i`` (int32),
    ``i8 i16 i32 i64 u8 u16 u32 u64`` and ``f f16 f32 f64`` choose the dtype
    (``dtypes.INT_SUFFIX``/``FLOAT_SUFFIX``). A float literal whose magnitude exceeds the
    dtype's largest finite value is out of range (``65505f16``, ``1e39f``) -- except the
    shortest decimal form of that largest value itself, which is how it prints
    (``3.4028235e38f``); ``inff``/``nanf`` spell the non-finite values. With
    ``check_range=False`` (attribute values, which are plain Python numbers) the value is
    not checked against the dtype's range.

    Raises:
        ValueError: with a user-facing message (bad suffix, out of range, too long).
    """
    from semantics.dtypes import FLOAT_SUFFIX, INT_SUFFIX

    special = _SPECIAL_FLOAT.match(raw)
    if special is not None:
        value = float(special.group(1))
        return (-value if negative else value), FLOAT_SUFFIX[special.group(2)]
    if len(raw) > _MAX_LITERAL_CHARS:
        raise ValueError(f"numeric literal too long ({len(raw)} characters)")
    m = _NUMBER.match(raw)
    if m is None:
        raise ValueError(f"malformed numeric literal `{raw}`")
    digits, frac, exp, suffix = m.groups()
    looks_float = frac is not None or exp is not None
    sign = "-" if negative else ""
    if suffix == "":
        dtype = "float32" if looks_float else "int32"
    elif suffix == "i" or suffix in INT_SUFFIX:
        if looks_float:
            raise ValueError(f"integer suffix `{suffix}` on the non-integer literal `{raw}`")
        dtype = INT_SUFFIX.get(suffix, "int32")
    elif suffix in FLOAT_SUFFIX:
        dtype = FLOAT_SUFFIX[suffix]
    else:
        known = " ".join(["i", *INT_SUFFIX, *FLOAT_SUFFIX])
        raise ValueError(f"bad literal suffix `{suffix}` in `{raw}` (expected one of: {known})")
    if dtype.startswith(("int", "uint")):
        value = -int(digits) if negative else int(digits)
        lo, hi = _INT_RANGE[dtype]
        if suffix == "" and not lo <= value <= hi:
            dtype = "int64"     # TVM: an unsuffixed integer too large for int32 is int64
            lo, hi = _INT_RANGE[dtype]
        if check_range and not lo <= value <= hi:
            hint = " (use a wider suffix such as i64)" if dtype == "int32" else ""
            if suffix == "":
                hint = " (an unsuffixed integer is int32, or int64 when it needs 64 bits)"
            raise ValueError(f"literal {sign}{raw} is out of range for {dtype}{hint}")
        return value, dtype
    number = raw[: len(raw) - len(suffix)] if suffix else raw
    fvalue = float(number)
    if negative:
        fvalue = -fvalue
    if not check_range:
        return fvalue, dtype
    if fvalue != fvalue or fvalue in (float("inf"), float("-inf")) or \
            abs(fvalue) > _largest_literal(dtype):
        hint = " (use the f64 suffix)" if dtype != "float64" else ""
        raise ValueError(f"literal {sign}{raw} is out of range for {dtype}: its magnitude "
                         f"exceeds the largest finite {dtype}{hint}")
    return fvalue, dtype


@functools.cache
def _largest_literal(dtype: str) -> float:
    """The largest magnitude a ``dtype`` literal may spell: the dtype's largest finite value,
    or the (slightly larger) float64 value of that value's shortest decimal form."""
    import numpy as np

    largest = np.finfo(dtype).max
    return max(float(largest), float(repr(largest.item()) if dtype == "float64"
                                     else np.format_float_positional(largest, unique=True)))


def decode_string(raw: str) -> str:
    """The value of a ``STR`` token (with its quotes): escapes ``\\\\ \\" \\n \\t \\r \\0
    \\xHH \\uHHHH``.

    Raises:
        ValueError: an unknown escape sequence.
    """
    body = raw[1:-1]
    if "\\" not in body:
        return body

    def replace(m: re.Match[str]) -> str:
        esc = m.group(1)
        if len(esc) > 1:
            return chr(int(esc[1:], 16))
        if esc in _ESCAPES:
            return _ESCAPES[esc]
        raise ValueError(f"unknown escape sequence `\\{esc}` in a string")

    return _ESCAPE.sub(replace, body)
