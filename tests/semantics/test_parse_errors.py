"""Malformed text: every error is a ParseError at the right place saying what was expected.

The parametrized table gives each input, the entry point, the expected line (and column
when it matters) and a fragment of the message. The Hypothesis properties at the end check
that nothing but ParseError (always with a span) escapes ``parse``/``parse_expr``/
``parse_type`` for random text, random token soups and mutated valid programs. (These
strategies are ad hoc compositions of text; the reusable program strategies live in
``conformance``.)
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from semantics.errors import ParseError, RelayError
from semantics.lexer import tokenize
from semantics.parser import parse, parse_expr, parse_type
from semantics.prelude import prelude_text

ENTRY = {"mod": parse, "expr": parse_expr, "type": parse_type}

META = ('#[metadata]\n{"relay.Constant": [{"dtype": "float32", "shape": [2], '
        '"data": "AACAPwAAAEA="}]}')

CASES = [
    # lexical
    ("expr", "1 +\n\"abc", 2, "unterminated string"),
    ("expr", "1\n/* never closed", 2, "unterminated comment"),
    ("expr", "add(%x,\n  %y $ 1)", 2, "unexpected character `$`"),
    ("expr", "\n\n\x00", 3, "unexpected character U+0000"),
    ("expr", "%x & %y", 1, "`&&`"),
    ("expr", "%x | %y", 1, "`||`"),
    ("expr", "1 +\n@", 2, "after `@`"),
    ("expr", "let %x = 1;\n%", 2, "after `%`"),
    ("mod", "#[version = \"0.0.5\"]\n#[inline]\ndef @f() { 1 }", 2, "`#[metadata]`"),
    ("mod", "#[version = \"1.0\"]\ndef @f() { 1 }", 1, "unsupported text format version"),
    ("mod", "def @f() { 1 }\n#[version = \"0.0.5\"]", 2, "must come first"),
    ("expr", "\"bad \\q escape\"", 1, "string literal is only allowed"),
    ("expr", "sum(%x, axis=\"\\q\")", 1, "unknown escape"),
    # numbers
    ("expr", "add(1,\n 1.5i32)", 2, "integer suffix"),
    ("expr", "1 +\n3xyz", 2, "bad literal suffix `xyz`"),
    ("expr", "\n9223372036854775808", 2, "out of range for int64"),
    ("expr", "256u8", 1, "out of range for uint8"),
    ("expr", "-1u32", 1, "out of range for uint32"),
    ("expr", "128i8", 1, "out of range for int8"),
    ("expr", "1e39f", 1, "out of range for float32"),
    ("expr", "70000f16", 1, "out of range for float16"),
    ("expr", "1" * 500, 1, "too long"),
    # brackets
    ("expr", "(1,\n 2", 1, "unclosed `(`"),
    ("expr", "1)\n", 1, "unbalanced `)`"),
    ("mod", "def @f() {\n  (1, 2]\n}", 2, "expected `)` to close `(`"),
    ("mod", "def @f() {\n  1\n", 1, "unclosed `{`"),
    # expressions
    ("expr", "", 1, "expected an expression, found end of input"),
    ("expr", "  // just a comment\n", 2, "expected an expression, found end of input"),
    ("expr", "1 +\n", 2, "expected an expression"),
    ("expr", "1 2", 1, "expected end of input"),
    ("expr", "let x = 1; x", 1, "expected a variable such as `%x` after `let`"),
    ("expr", "let %x = 1\n%x", 2, "expected `;` after the value of `let %x`"),
    ("expr", "let %x = 1;\n", 2, "a block ends with an expression"),
    ("expr", "1;\n", 2, "expected an expression after `;`"),
    ("expr", "%0 = add(%x, %x)\n%0", 2, "expected `;` after the graph binding"),
    ("expr", "if (True) { 1 }\n", 2, "expected `else`"),
    ("expr", "if True { 1 } else { 2 }", 1, "expected `(` after `if`"),
    ("expr", "match (%x) {\n  Cons(%a, _) { %a }\n}", 2, "expected `=>` after pattern, found `{`"),
    ("expr", "match (%x) {\n  Cons(%a, %a) => %a\n}", 2, "bound twice"),
    ("expr", "match (%x) {\n  Foo => 1\n}", 2, "unknown constructor `Foo`"),
    ("expr", "match (%x) {\n  \"s\" => 1\n}", 2, "expected a pattern"),
    ("expr", "match (%x) {\n  1 => 1\n}", 2, "no literal patterns"),
    ("expr", "match (%x) {\n  _ => 1\n  _ => 2\n}", 3, "expected `,` or `}` after a match clause"),
    ("expr", "fn (%x, %x) { %x }", 1, "duplicate parameter %x"),
    ("expr", "fn (%x) %x", 1, "expected `{` to start the body of a function"),
    ("expr", "fn (x) { 1 }", 1, "expected a parameter"),
    ("expr", "add(%x,\n  axis=1, %y)", 2, "positional arguments come before attributes"),
    ("expr", "sum(%x, axis=1,\n  axis=2)", 2, "duplicate attribute axis"),
    ("expr", "@f(%x, axis=1,\n  %y)", 2, "positional arguments come before attributes"),
    ("expr", "sum(%x, axis=%y)", 1, "expected an attribute value"),
    ("expr", "no_such_op(1)", 1, "unknown operator or constructor `no_such_op`"),
    ("expr", "nn.no_such_op(%x)", 1, "unknown operator or constructor `nn.no_such_op`"),
    ("expr", "float32", 1, "is a type, not an expression"),
    ("expr", "List", 1, "is a type, not an expression"),
    ("expr", "_", 1, "only allowed in patterns"),
    ("expr", "1 + let %x = 1; %x", 1, "`let` must start a statement"),
    ("expr", "ref_write(%r)", 1, "expected `,` between the reference and the value"),
    ("expr", "ref(1", 1, "unclosed `(`"),
    ("expr", "free_var %x;\nfree_var %x;\n%x", 2, "declared twice"),
    ("expr", "free_var x; x", 1, "after `free_var`"),
    ("expr", "%t.99999999999999", 1, "too large"),
    # metadata
    ("expr", "meta[relay.Constant][0]", 1, "no `#[metadata]` section"),
    ("expr", "\nmeta[relay.Constant][2]\n" + META, 2, "out of range"),
    ("expr", "meta[relay.Function][0]\n" + META, 1, "unsupported metadata kind"),
    ("expr", "meta[relay.Constant][x]\n" + META, 1, "expected a metadata index"),
    ("expr", "1\n#[metadata]\n{\"relay.Constant\": [}", 3, "malformed metadata section"),
    ("expr", "1\n#[metadata]\n{\"relay.Constant\": [{\"dtype\": \"float32\", \"shape\": [3], "
     "\"data\": \"AACAPwAAAEA=\"}]}", 3, "data bytes"),
    ("expr", "1\n#[metadata]\n{\"relay.Constant\": [{\"dtype\": \"float8\", \"shape\": [], "
     "\"data\": \"\"}]}", 3, "valid \"dtype\""),
    ("expr", "1\n#[metadata]\n[1, 2]", 3, "expected a JSON object"),
    # modules
    ("mod", "1 + 2", 1, "expected `def` or `type` at the top level"),
    ("mod", "def @f() { 1 }\n\ndef @f() { 2 }", 3, "duplicate definition of global @f"),
    ("mod", "type T { A }\ntype T { B }", 2, "duplicate definition of type T"),
    ("mod", "type T {\n  A,\n  A,\n}", 3, "duplicate constructor A"),
    ("mod", "type T { A }\ntype U { A }", 2, "duplicate constructor A"),
    ("mod", "type let { A }", 1, "reserved"),
    ("mod", "type T { fn }", 1, "reserved"),
    ("mod", "type float32 { A }", 1, "reserved"),
    ("mod", "type T[Tensor] { A }", 1, "reserved"),
    ("mod", "type T[A, A] { B }", 1, "duplicate type parameter A"),
    ("mod", "def @f[A: Weird](%x: A) { %x }", 1, "expected a kind"),
    ("mod", "def f() { 1 }", 1, "expected `GLOBAL` after `def`"),
    ("mod", "def @f(%x: Foo) {\n  %x\n}", 1, "unknown type `Foo`"),
    ("mod", "def @f() {\n  Foo(1)\n}", 2, "unknown operator or constructor `Foo`"),
    # types
    ("type", "A", 1, "unknown type `A`"),
    ("type", "fn (A) -> A", 1, "unknown type `A`"),
    ("type", "Tensor[(3), floaty]", 1, "expected a dtype"),
    ("type", "Tensor[(3) float32]", 1, "expected `,` between the shape and the dtype"),
    ("type", "Tensor[(-1), float32]", 1, "negative dimension"),
    ("type", "Tensor[(n +), float32]", 1, "expected a dimension"),
    ("type", "Tensor[(? + 1), float32]", 1, "`?` must be a whole dimension"),
    ("type", "Tensor[(n / 0), float32]", 1, "division by zero"),
    ("type", "Tensor[(5 / 2), float32]", 1, "dimensions are integers"),
    ("type", "Tensor[(1.5), float32]", 1, "expected an integer dimension"),
    ("type", "Tensor[(let), float32]", 1, "expected a dimension"),
    ("type", "fn (int32) int32", 1, "expected `->`"),
    ("type", "(int32, float32", 1, "unclosed `(`"),
    ("type", "", 1, "expected a type, found end of input"),
    ("type", "int32 int32", 1, "expected end of input after the type"),
    ("type", "Tensor[(" + "(" * 300 + "n" + ")" * 300 + "), float32]", 1, "nested too deeply"),
    ("expr", "sum(%x, axis=" + "[" * 300 + "]" * 300 + ")", 1, "nested too deeply"),
]


@pytest.mark.parametrize("entry, text, line, fragment", CASES,
                         ids=[f"{i}-{c[0]}" for i, c in enumerate(CASES)])
def test_malformed_input(entry, text, line, fragment):
    with pytest.raises(ParseError) as info:
        ENTRY[entry](text)
    err = info.value
    assert fragment in err.message, err.message
    assert err.span is not None
    assert err.span.line == line, str(err)
    assert str(err).startswith(f"<string>:{line}:")


def test_enough_cases():
    assert len(CASES) >= 40


def test_error_column_and_caret():
    with pytest.raises(ParseError) as info:
        parse_expr("let %x = 1;\nlet %y = %x +* 2;\n%y", source_name="f.relay")
    err = info.value
    assert (err.span.line, err.span.column) == (2, 14)
    text = str(err)
    assert text.splitlines()[0] == "f.relay:2:14: error: expected an expression, found `*`"
    assert text.splitlines()[2].strip() == "^"


def test_parse_error_is_a_relay_error():
    with pytest.raises(RelayError):
        parse("def")


# --- nothing but ParseError escapes -------------------------------------------------------

TOKENS = [
    "def", "@main", "@f", "fn", "let", "%x", "%0", "%1", "%y", "=", ";", "(", ")", "{", "}",
    "[", "]", ",", ":", "->", "=>", "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=",
    "&&", "||", ":=", "!", "?", ".0", ".1", "1", "-1", "2.5", "1e-05f", "inff", "nanf", "3i64",
    "7u8", "255u8", "2147483648", "True", "False", "None", "Cons", "Nil", "Some", "Rose", "add",
    "nn.conv2d", "negative", "match", "match?", "if", "else", "ref", "ref_read", "ref_write",
    "grad", "free_var", "type", "extern", "List", "Tensor", "Ref", "float32", "int32", "_", "A",
    "n", "meta", "relay.Constant", "\"s\"", "\"", "#[version = \"0.0.5\"]", "#[metadata]",
    "/* c */", "/*", "*/", "// c\n", "\n", "axis", "Primitive", "floor", "x", "<A>", "[A]",
    "{\"relay.Constant\": []}", "#", "é", "\x00",
]

ALPHABET = st.sampled_from(list("()[]{}<>%@.,;:=+-*/!?&|#\"'\\ \n\tabcfinAZ019_e") +
                           ["/*", "*/", "//", "é", "\x00", "let ", "fn ", "def "])


def _only_parse_errors(text: str) -> None:
    for entry in (parse, parse_expr, parse_type):
        try:
            entry(text)
        except ParseError as err:
            assert err.span is not None
            assert isinstance(str(err), str)


@settings(max_examples=400)
@given(st.text(max_size=60))
def test_random_text_raises_only_parse_errors(text):
    _only_parse_errors(text)


@settings(max_examples=400)
@given(st.lists(ALPHABET, max_size=60).map("".join))
def test_random_characters_raise_only_parse_errors(text):
    _only_parse_errors(text)


@settings(max_examples=400)
@given(st.lists(st.sampled_from(TOKENS), max_size=40).map(" ".join))
def test_token_soups_raise_only_parse_errors(text):
    _only_parse_errors(text)


_VALID = [
    prelude_text(),
    """#[version = "0.0.5"]
def @main(%x: Tensor[(1, 3, 4, 4), float32], %w: Tensor[(2, 3, 3, 3), float32]) {
  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1], channels=2, kernel_size=[3, 3]);
  %1 = fn (%p0: Tensor[(1, 2, 4, 4), float32], Primitive=1) { nn.relu(%p0) };
  %2 = %1(%0);
  let %r = ref(1);
  %r := !%r + 1;
  (%2, %2.0, -3i64, 1e-05f, inff)
}
""",
    """free_var %x: Tensor[(n, ?), float32];
let %f = fn <A>(%y: A, %z: (A, Ref[A], fn (A) -> A)) -> A {
  if (True) { %y } else { match? (%y) { (%a, _) => %a, Cons(%h, Nil) => { %h } } }
};
(meta[relay.Constant][0], %f)
#[metadata]
{"relay.Constant": [{"dtype": "float32", "shape": [2], "data": "AACAPwAAAEA="}]}""",
]


def _token_texts(text: str) -> list[str]:
    toks = tokenize(text)
    out = [('#[version = "0.0.5"]' if k == "VERSION" else t)
           for k, t in zip(toks.kinds, toks.texts, strict=True) if k != "EOF"]
    if toks.metadata is not None:
        out.append("#[metadata]\n" + toks.metadata)
    return out


_VALID_TOKENS = [_token_texts(t) for t in _VALID]
_ALL_TOKENS = sorted({t for ts in _VALID_TOKENS for t in ts} | set(TOKENS))


@st.composite
def mutated_programs(draw):
    tokens = list(draw(st.sampled_from(_VALID_TOKENS)))
    for _ in range(draw(st.integers(1, 4))):
        j = draw(st.integers(0, len(tokens) - 1))
        how = draw(st.sampled_from(["delete", "insert", "replace", "swap"]))
        if how == "delete" and len(tokens) > 1:
            del tokens[j]
        elif how == "insert":
            tokens.insert(j, draw(st.sampled_from(_ALL_TOKENS)))
        elif how == "replace":
            tokens[j] = draw(st.sampled_from(_ALL_TOKENS))
        else:
            k = draw(st.integers(0, len(tokens) - 1))
            tokens[j], tokens[k] = tokens[k], tokens[j]
    return " ".join(tokens)


@settings(max_examples=300)
@given(mutated_programs())
def test_mutated_programs_raise_only_parse_errors(text):
    for entry in (parse, parse_expr):
        try:
            entry(text)
        except ParseError as err:
            assert err.span is not None


def test_valid_seeds_parse():
    parse(_VALID[0], prelude=False)
    parse(_VALID[1])
    parse_expr(_VALID[2])


# --- `else if` chains and literal patterns ---------------------------------------------------

def _if_chain(n: int, braces: bool) -> str:
    if braces:
        body = "".join(f"if (%x == {i}) {{ {i} }} else {{ " for i in range(n)) + "-1" + " }" * n
    else:
        body = "".join(f"if (%x == {i}) {{ {i} }} else " for i in range(n)) + "{ -1 }"
    return "fn (%x: int32) { " + body + " }"


def test_else_if_chain_costs_no_parser_level():
    from semantics import alpha_equal
    from semantics.expr import Function, If

    chain = parse_expr(_if_chain(20_000, braces=False))
    nested = parse_expr(_if_chain(20_000, braces=True))
    assert alpha_equal(chain, nested)
    assert isinstance(chain, Function)
    node, links = chain.body, 0
    while isinstance(node, If):
        links += 1
        node = node.false_branch
    assert links == 20_000


def test_else_if_chain_spans_run_from_each_if_to_the_end():
    from semantics.expr import Function, If

    e = parse_expr("fn (%x: int32) {\n  if (%x == 0) { 0 }\n  else if (%x == 1) { 1 }\n"
                   "  else { 2 }\n}")
    assert isinstance(e, Function) and isinstance(e.body, If)
    inner = e.body.false_branch
    assert isinstance(inner, If)
    assert (e.body.span.line, e.body.span.end_line) == (2, 4)
    assert (inner.span.line, inner.span.column, inner.span.end_line) == (3, 8, 4)


@pytest.mark.parametrize("pattern", ["True", "False"])
def test_bool_pattern_explains_there_are_no_literal_patterns(pattern):
    with pytest.raises(ParseError) as info:
        parse_expr(f"fn (%b: bool) {{ match (%b) {{ {pattern} => 1, _ => 0 }} }}")
    message = str(info.value)
    assert "bool literal" in message and "no literal patterns" in message
    assert "if (" in message
    assert f"%{pattern}" not in message
    assert info.value.span.column == 30


@pytest.mark.parametrize("pattern", ["0", "-1", "2.5f"])
def test_numeric_pattern_explains_there_are_no_literal_patterns(pattern):
    with pytest.raises(ParseError, match=f"`{pattern}` is a numeric literal, and Relay has no "
                                         "literal patterns"):
        parse_expr(f"fn (%b: int32) {{ match (%b) {{ {pattern} => 1, _ => 0 }} }}")


@pytest.mark.parametrize("text, name, column", [
    ("def @main() { %zz }", "%zz", 15),
    ("def @main(%t: (int32,)) { %t.first }", "%t.first", 27),
    ("def @main(%x: int32) { let %y = %x; %x + %w }", "%w", 42),
])
def test_an_undeclared_local_in_a_module_is_a_parse_error(text, name, column):
    """Issue 33: as TVM's parser, a local must be bound (let, parameter, pattern) or declared
    with ``free_var``; ``parse_expr`` keeps undeclared locals as free variables."""
    with pytest.raises(ParseError, match="this local variable has not been previously "
                                         "declared") as info:
        parse(text)
    assert name in info.value.message
    assert info.value.span is not None and info.value.span.column == column


def test_declared_free_variables_and_expressions_keep_free_locals():
    mod = parse("def @main() { free_var %a: int32; %a }")
    assert mod["main"].body.name_hint == "a"
    assert parse_expr("%x + 1").args[0].name_hint == "x"
