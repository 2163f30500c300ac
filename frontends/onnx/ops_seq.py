"""ONNX sequences → the prelude's ``List``, optionals → the prelude's ``Option``.

A sequence of tensors is a ``List[Tensor[dims, dtype]]``. Its elements may differ in shape
(``SplitToSequence`` with a short last chunk, ``SequenceInsert`` of another size): the element
type is the *join* of the element types, a dimension that differs becoming ``?`` (``Any``).
Every constructor call carries its element type as an explicit type argument, so the type
checker sees the joined type, not the first element's. A sequence whose element type is not
known yet (``SequenceEmpty``, whose elements a ``Loop`` inserts later) has the element type
``_`` (an ``IncompleteType``) until a join fixes it.

Operations whose length is only known at run time are recursive Relay functions, never
unrolled: the polymorphic helpers ``@onnx_seq_*`` (position, at, insert, erase, length, in
Relay text below, added to the module with the prelude functions they use), and functions
generated per element type for ``ConcatFromSequence`` and ``SequenceMap`` (a let-bound
recursive function, as ``Loop`` is). Positions count from the end when negative; a position
out of range stops the program with a non-exhaustive-match error.

Graph inputs and outputs of sequence or optional type are ``List`` / ``Option`` values:
:func:`to_relay_value` turns Python lists of arrays (and ``None`` for an empty optional)
into ``ConstructorValue`` s for ``evaluate``, :func:`from_relay_value` turns results back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from frontends.onnx.builder import (
    ImporterError,
    Unsupported,
    Value,
    call,
    call_tuple,
    const,
    project,
)
from frontends.onnx.context import Context, onnx_dtype
from frontends.onnx.ops_math import _req
from frontends.onnx.registry import converter
from frontends.onnx.seq_types import (
    Unions,
    conform,
    cons,
    ctor,
    elem_type,
    from_values,
    is_complete,
    is_list,
    is_option,
    is_union_ctor_name,
    join,
    list_type,
    nil,
    option_type,
    some,
    union_dtype,
    union_ranks,
    unwrap,
)
from semantics.expr import (
    Call,
    Clause,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Match,
    PatternConstructor,
    PatternVar,
    PatternWildcard,
    Tuple,
    Var,
)
from semantics.printer import pretty
from semantics.shapes import ANY, is_concrete
from semantics.types import (
    FuncType,
    IncompleteType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    scalar_type,
)

_HELPERS_TEXT = """
def @onnx_seq_length[A](%xs: List[A], %acc: int64) -> int64 {
  match (%xs) {
    Cons(_, %t) => @onnx_seq_length(%t, %acc + 1i64),
    Nil => %acc,
  }
}

// A position outside the sequence stops the program here (a non-exhaustive match).
def @onnx_seq_out_of_range(%position: int64) -> int64 {
  let %position_out_of_range: List[int64] = Nil;
  match? (%position_out_of_range) {
    Cons(%q, _) => %q,
  }
}

def @onnx_seq_position[A](%xs: List[A], %p: int64, %extra: int64) -> int64 {
  let %n = @onnx_seq_length(%xs, 0i64);
  let %q = if (%p < 0i64) { %p + %n } else { %p };
  if (logical_and(%q >= 0i64, %q < %n + %extra)) { %q } else { @onnx_seq_out_of_range(%p) }
}

def @onnx_seq_at[A](%xs: List[A], %n: int64) -> A {
  match? (%xs) {
    Cons(%h, %t) => if (%n <= 0i64) { %h } else { @onnx_seq_at(%t, %n - 1i64) },
  }
}

def @onnx_seq_insert[A](%xs: List[A], %n: int64, %v: A) -> List[A] {
  if (%n <= 0i64) {
    Cons(%v, %xs)
  } else {
    match? (%xs) {
      Cons(%h, %t) => Cons(%h, @onnx_seq_insert(%t, %n - 1i64, %v)),
    }
  }
}

def @onnx_seq_erase[A](%xs: List[A], %n: int64) -> List[A] {
  match? (%xs) {
    Cons(%h, %t) => if (%n <= 0i64) { %t } else { Cons(%h, @onnx_seq_erase(%t, %n - 1i64)) },
  }
}
"""

_HELPERS: Any = None


def _helpers() -> Any:
    global _HELPERS
    if _HELPERS is None:
        from semantics.parser import parse
        _HELPERS = parse(_HELPERS_TEXT, source_name="<onnx sequence helpers>")
    return _HELPERS


def onnx_type(tp: Any, name: str, hint: Any = None, in_sequence: bool = False,
              strict: bool = True) -> Type:
    """The Relay type of an ONNX ``TypeProto`` (tensor, sequence, optional). Inside a
    sequence a symbolic dim is ``?`` (each element may have its own size). ``hint`` gives
    the dims where the proto has none (for a sequence or optional: its element's)."""
    kind = tp.WhichOneof("value")
    if kind == "sequence_type":
        return list_type(onnx_type(tp.sequence_type.elem_type, name, hint, True, strict))
    if kind == "optional_type":
        return option_type(onnx_type(tp.optional_type.elem_type, name, hint, in_sequence,
                                     strict))
    if kind != "tensor_type":
        raise Unsupported(f"input {name!r}: values of kind {kind} are not supported")
    tt = tp.tensor_type
    dtype = onnx_dtype(tt.elem_type)
    if hint is not None:
        return TensorType(tuple(ANY if d is None or (isinstance(d, int) and d < 0) else int(d)
                                for d in hint), dtype)
    if in_sequence and tt.HasField("shape") and not tt.shape.dim and not strict:
        # An element shape written as empty: unknown, inferred from the sequence's use.
        return IncompleteType()
    if not tt.HasField("shape") or (in_sequence and not tt.shape.dim):
        raise Unsupported(
            f"input {name!r}: the shape of its {'elements' if in_sequence else 'tensor'} is "
            f"not declared; give it with from_onnx(..., shapes={{{name!r}: (d0, d1, ...)}}) "
            f"(None or -1 for a dimension that varies)")
    if not in_sequence:
        from frontends.onnx.context import ident as _ident
        from semantics.shapes import shape_var
        dims = [int(d.dim_value) if d.HasField("dim_value")
                else shape_var(_ident(d.dim_param or f"{_ident(name)}_d{i}"))
                for i, d in enumerate(tt.shape.dim)]
        return TensorType(tuple(dims), dtype)
    return TensorType(tuple(int(d.dim_value) if d.HasField("dim_value") else ANY
                            for d in tt.shape.dim), dtype)


# --- helpers -------------------------------------------------------------------------------

def _helper(name: str, args: list[Value], elem: Type, ret: Type) -> Value:
    targs = (elem,) if is_complete(elem) else ()
    return Value(ret, Call(GlobalVar(name), tuple(a.expr for a in args), type_args=targs))


def length(seq: Value) -> Value:
    return _helper("onnx_seq_length", [seq, const(np.int64(0))], elem_type(seq),
                   scalar_type("int64"))


def _position(ins: list[Value | None], k: int, seq: Value, extra: int) -> Value | None:
    p = ins[k] if len(ins) > k else None
    if p is None:
        return None
    p = call("cast", [call("reshape", [p], newshape=())], dtype="int64")
    return _helper("onnx_seq_position", [seq, p, const(np.int64(extra))], elem_type(seq),
                   scalar_type("int64"))


def module_definitions(main: Function, unions: Unions | None = None
                       ) -> tuple[dict[str, Function], dict[str, Any]]:
    """The prelude and helper functions and the ADTs ``main`` uses (none if no ADT), with
    the rank unions of the import."""
    from semantics.prelude import needed_definitions
    from semantics.visitor import post_order

    nodes = post_order(main)
    names = {n.name_hint for n in nodes if isinstance(n, GlobalVar)}
    adts = any(isinstance(n, (Constructor, Match)) for n in nodes) or any(
        isinstance(p.type_annotation, TypeCall) for p in main.params)
    if not names and not adts:
        return {}, {}
    helpers = _helpers()
    functions: dict[str, Function] = {}
    if any(n.startswith("onnx_seq_") for n in names):
        functions.update(helpers.functions)
    functions_p, types = needed_definitions({n: None for n in names}, {"List": None,
                                                                       "Option": None})
    functions_p.update(functions)
    if unions is not None:
        types.update(unions.definitions())
    return functions_p, types


# --- converters ----------------------------------------------------------------------------

@converter("SequenceConstruct")
def _seq_construct(ctx: Context, node: Any, ins: list[Value | None],
                   attrs: dict[str, Any]) -> list[Value]:
    return [from_values([v for v in ins if v is not None])]


@converter("SequenceEmpty", attrs=("dtype",))
def _seq_empty(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    # The element's shape is fixed by what is inserted later (a join with the unknown type).
    return [nil(IncompleteType())]


@converter("SequenceAt")
def _seq_at(ctx: Context, node: Any, ins: list[Value | None],
            attrs: dict[str, Any]) -> list[Value]:
    seq = _req(ins, 0)
    pos = _position(ins, 1, seq, 0)
    assert pos is not None
    at_elem = _helper("onnx_seq_at", [seq, pos], elem_type(seq), elem_type(seq))
    if union_dtype(elem_type(seq)) is None:
        return [at_elem]
    # Tensors of several ranks: the element's rank is known when the sequence and the
    # position are (it is unwrapped); otherwise the element stays in its rank union.
    at = _static_pos(ins, 1, seq, 0)
    rank = seq.ranks[at] if seq.ranks is not None and at is not None else -1
    return [at_elem if rank < 0 else unwrap(at_elem, rank)]


def _static_pos(ins: list[Value | None], k: int, seq: Value, extra: int) -> int | None:
    """Input ``k``, a position in ``seq`` of static length (None: the end; negative: from the
    end), when it is known at import time and in range (``extra``: one past the end too)."""
    if seq.ranks is None:
        return None
    n = len(seq.ranks)
    p = ins[k] if len(ins) > k else None
    if p is None:
        return n - 1 + extra
    if p.const is None:
        return None
    at = int(np.asarray(p.const).reshape(-1)[0])
    at = at + n if at < 0 else at
    return at if 0 <= at < n + extra else None


@converter("SequenceLength")
def _seq_length(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    return [length(_req(ins, 0))]


@converter("SequenceInsert")
def _seq_insert(ctx: Context, node: Any, ins: list[Value | None],
                attrs: dict[str, Any]) -> list[Value]:
    seq, v = _req(ins, 0), _req(ins, 1)
    elem = join(elem_type(seq), v.type)
    pos = _position(ins, 2, seq, 1)
    at = _static_pos(ins, 2, seq, 1)
    if pos is None:
        pos = length(seq)
    out = _helper("onnx_seq_insert", [conform(seq, list_type(elem)), pos, conform(v, elem)],
                  elem, list_type(elem))
    if seq.ranks is not None and at is not None and isinstance(v.type, TensorType):
        out.ranks = seq.ranks[:at] + (v.ndim,) + seq.ranks[at:]
    return [out]


@converter("SequenceErase")
def _seq_erase(ctx: Context, node: Any, ins: list[Value | None],
               attrs: dict[str, Any]) -> list[Value]:
    seq = _req(ins, 0)
    pos = _position(ins, 1, seq, 0)
    at = _static_pos(ins, 1, seq, 0)
    if pos is None:
        pos = call("subtract", [length(seq), const(np.int64(1))])
    out = _helper("onnx_seq_erase", [seq, pos], elem_type(seq), seq.type)
    if seq.ranks is not None and at is not None:
        out.ranks = seq.ranks[:at] + seq.ranks[at + 1:]
    return [out]


@converter("SplitToSequence", attrs=("axis", "keepdims"))
def _split_to_sequence(ctx: Context, node: Any, ins: list[Value | None],
                       attrs: dict[str, Any]) -> list[Value]:
    from frontends.onnx.builder import static_ints
    x = _req(ins, 0)
    axis = int(attrs.get("axis", 0))
    axis = axis + x.ndim if axis < 0 else axis
    dim = x.shape[axis]
    split = ins[1] if len(ins) > 1 else None
    if not is_concrete(dim):
        if split is not None:
            raise Unsupported(f"SplitToSequence with a split input needs a static length "
                              f"along axis {axis}, got {x.shape}")
        return [_unstack(x, axis, bool(attrs.get("keepdims", 1)))]
    n = int(dim)
    if split is None:
        sizes = [1] * n
    else:
        values = static_ints(split, "the SplitToSequence split")
        if np.asarray(split.const).ndim == 0:
            step = values[0]
            if step <= 0:
                raise Unsupported(f"SplitToSequence split {step} must be positive")
            sizes = [min(step, n - s) for s in range(0, n, step)]
        else:
            sizes = values
    if sum(sizes) != n or any(s < 0 for s in sizes):
        raise Unsupported(f"SplitToSequence sizes {sizes} do not add up to {n}")
    parts: list[Value] = []
    start = 0
    for s in sizes:
        part = call("strided_slice", [x], begin=(start,), end=(start + s,), strides=(1,),
                    axes=(axis,))
        if split is None and not int(attrs.get("keepdims", 1)):
            part = call("squeeze", [part], axis=(axis,))
        parts.append(part)
        start += s
    return [from_values(parts, None if parts else _empty_elem(x, axis))]


def _unstack(x: Value, axis: int, keepdims: bool) -> Value:
    """The list of ``x[..., i, ...]`` along ``axis`` of run-time length: a recursion from the
    last index down, consing each slice (``take``) onto the list of the following ones."""
    i64 = scalar_type("int64")
    i_var = Var("i", i64)
    i_val = Value(i64, i_var)
    item = call("take", [x, i_val], axis=axis)
    if keepdims:
        item = call("expand_dims", [item], axis=axis)
    lt = list_type(item.type)
    acc_var = Var("acc", lt)
    f_var = Var("unstack", FuncType((i64, lt), lt))
    recur = Call(f_var, (call("subtract", [i_val, const(np.int64(1))]).expr,
                         cons(item, Value(lt, acc_var)).expr))
    body = If(call("less", [i_val, const(np.int64(0))]).expr, acc_var, recur)
    n = call("cast", [call("take", [call("shape_of", [x]), const(np.int64(axis))], axis=0)],
             dtype="int64")
    last = call("subtract", [n, const(np.int64(1))])
    fn = Function((i_var, acc_var), body, lt)
    return Value(lt, Let(f_var, fn, Call(f_var, (last.expr, nil(item.type).expr))))


def _empty_elem(x: Value, axis: int) -> Type:
    return TensorType(tuple(ANY if i == axis else d for i, d in enumerate(x.shape)), x.dtype)


@converter("ConcatFromSequence", attrs=("axis", "new_axis"))
def _concat_from_sequence(ctx: Context, node: Any, ins: list[Value | None],
                          attrs: dict[str, Any]) -> list[Value]:
    seq = _req(ins, 0)
    return [concat_list(seq, int(attrs["axis"]), bool(attrs.get("new_axis", 0)))]


def concat_list(seq: Value, axis: int, new_axis: bool, reverse: bool = False,
                empty: Value | None = None) -> Value:
    """The tensors of ``seq`` concatenated along ``axis`` (stacked along a new ``axis`` when
    ``new_axis``), in list order or, with ``reverse``, in reverse order: a recursive function
    over the list. Starts from ``empty`` when given (a zero-length tensor), else from the first
    element (an empty list is then a run-time error)."""
    elem = elem_type(seq)
    if union_dtype(elem) is not None:
        raise Unsupported(f"concatenating a sequence needs tensors of one rank, this sequence "
                          f"holds tensors of ranks {union_ranks(elem)} ({pretty(elem)})")
    if not isinstance(elem, TensorType):
        raise Unsupported(f"ConcatFromSequence needs a sequence of tensors, got {seq.type}")
    rank = elem.ndim + (1 if new_axis else 0)
    if not -rank <= axis < rank:
        raise Unsupported(f"axis {axis} is out of range for rank {rank}")
    axis = axis % rank
    h_var, t_var = Var("h", elem), Var("t", seq.type)

    def piece(v: Value) -> Value:
        return call("expand_dims", [v], axis=axis) if new_axis else v

    first = piece(Value(elem, h_var))
    acc_t = TensorType(tuple(ANY if i == axis else d for i, d in enumerate(first.shape)),
                       elem.dtype)
    acc_var = Var("acc", acc_t)
    acc = Value(acc_t, acc_var)
    joined = call_tuple("concatenate", [first, acc] if reverse else [acc, first], axis=axis)
    xs_var = Var("xs", seq.type)
    f_var = Var("concat_seq", FuncType((acc_t, seq.type), acc_t))
    recur = Call(f_var, (joined.expr, t_var))
    body = Match(xs_var, (
        Clause(PatternConstructor(ctor("Cons"), (PatternVar(h_var), PatternVar(t_var))), recur),
        Clause(PatternConstructor(ctor("Nil"), ()), acc_var)))
    fn = Function((acc_var, xs_var), body, acc_t)
    start: Expr
    if empty is not None:
        start = Call(f_var, (empty.expr, seq.expr))
    else:
        h2, t2 = Var("h0", elem), Var("t0", seq.type)
        start = Match(seq.expr, (Clause(PatternConstructor(
            ctor("Cons"), (PatternVar(h2), PatternVar(t2))),
            Call(f_var, (piece(Value(elem, h2)).expr, t2))),), False)
    return Value(acc_t, Let(f_var, fn, start))


@converter("SequenceMap", attrs=("body",))
def _sequence_map(ctx: Context, node: Any, ins: list[Value | None],
                  attrs: dict[str, Any]) -> list[Value]:
    body = attrs["body"]
    vals = [v for v in ins if v is not None]
    seqs = [v for v in vals if is_list(v.type)]
    if not seqs or not is_list(vals[0].type):
        raise Unsupported("SequenceMap's first input must be a sequence")
    seq_vars = [Var(f"xs{k}", v.type) for k, v in enumerate(vals) if is_list(v.type)]
    heads = [Var(f"h{k}", elem_type(v)) for k, v in enumerate(vals) if is_list(v.type)]
    tails = [Var(f"t{k}", v.type) for k, v in enumerate(vals) if is_list(v.type)]
    body_ins: list[Value] = []
    it = iter(heads)
    for v in vals:
        body_ins.append(Value(elem_type(v), next(it)) if is_list(v.type) else v)
    outs = ctx.convert_graph(body, body_ins)
    out_types = [list_type(o.type) for o in outs]
    ret = TupleType(tuple(out_types))
    f_var = Var("sequence_map", FuncType(tuple(v.type for v in seqs), ret))
    rest = Var("rest", ret)
    rest_v = Value(ret, rest)
    built = Tuple(tuple(cons(o, project(rest_v, k)).expr for k, o in enumerate(outs)))
    inner: Any = Let(rest, Call(f_var, tuple(tails)), built)
    for xs, h, t in reversed(list(zip(seq_vars[1:], heads[1:], tails[1:]))):
        inner = Match(xs, (Clause(PatternConstructor(
            ctor("Cons"), (PatternVar(h), PatternVar(t))), inner),), False)
    empty = Tuple(tuple(nil(elem_type(t)).expr for t in out_types))
    fbody = Match(seq_vars[0], (
        Clause(PatternConstructor(ctor("Cons"), (PatternVar(heads[0]), PatternVar(tails[0]))),
               inner),
        Clause(PatternConstructor(ctor("Nil"), ()), empty)))
    fn = Function(tuple(seq_vars), fbody, ret)
    result = Value(ret, Let(f_var, fn, Call(f_var, tuple(s.expr for s in seqs))))
    return [project(result, k) for k in range(len(outs))]


# --- optionals -----------------------------------------------------------------------------

@converter("Optional", attrs=("type",))
def _optional(ctx: Context, node: Any, ins: list[Value | None],
              attrs: dict[str, Any]) -> list[Value]:
    v = ins[0] if ins else None
    if v is not None:
        return [some(v)]
    if "type" not in attrs:
        raise Unsupported("an empty Optional needs its type attribute")
    t = onnx_type(attrs["type"], node.output[0])
    return [Value(option_type(t), Call(ctor("None"), (), type_args=(t,)))]


@converter("OptionalHasElement")
def _optional_has_element(ctx: Context, node: Any, ins: list[Value | None],
                          attrs: dict[str, Any]) -> list[Value]:
    v = ins[0] if ins else None
    if v is None:
        return [const(np.bool_(False))]
    if not is_option(v.type):
        return [const(np.bool_(True))]
    m = Match(v.expr, (
        Clause(PatternConstructor(ctor("Some"), (PatternWildcard(),)),
               const(np.bool_(True)).expr),
        Clause(PatternConstructor(ctor("None"), ()), const(np.bool_(False)).expr)))
    return [Value(scalar_type("bool"), m)]


@converter("OptionalGetElement")
def _optional_get_element(ctx: Context, node: Any, ins: list[Value | None],
                          attrs: dict[str, Any]) -> list[Value]:
    v = _req(ins, 0)
    if not is_option(v.type):
        return [v]
    x = Var("x", elem_type(v))
    m = Match(v.expr, (Clause(PatternConstructor(ctor("Some"), (PatternVar(x),)), x),), False)
    return [Value(elem_type(v), m)]


# --- values crossing from and to Python ------------------------------------------------------

def to_relay_value(x: Any, ty: Type) -> Any:
    """A Python argument for a parameter of type ``ty``: a list of arrays for a ``List``,
    ``None`` or the value for an ``Option``; arrays as they are."""
    from interpreter.values import ConstructorValue
    if is_list(ty):
        if not isinstance(x, (list, tuple)):
            raise ImporterError(f"expected a list for a sequence, got {type(x).__name__}")
        acc = ConstructorValue("Nil")
        for item in reversed(list(x)):
            acc = ConstructorValue("Cons", (to_relay_value(item, elem_type(ty)), acc))
        return acc
    if is_option(ty):
        if x is None:
            return ConstructorValue("None")
        return ConstructorValue("Some", (to_relay_value(x, elem_type(ty)),))
    return x


def from_relay_value(v: Any) -> Any:
    """A result as Python: a ``List`` as a list, ``None``/``Some(x)`` as ``None``/``x``, an
    element of a sequence of tensors of several ranks (``OnnxF32R1(x)``) as ``x``."""
    name = getattr(v, "name", None)
    if isinstance(name, str) and is_union_ctor_name(name):
        return v.fields[0]      # a tensor of a sequence of several ranks
    if name in ("Cons", "Nil"):
        items = []
        while getattr(v, "name", None) == "Cons":
            items.append(from_relay_value(v.fields[0]))
            v = v.fields[1]
        return items
    if name == "None":
        return None
    if name == "Some":
        return from_relay_value(v.fields[0])
    if isinstance(v, tuple):
        return tuple(from_relay_value(x) for x in v)
    return v


def input_type(tp: Any, name: str, shapes: Mapping[str, Any] | None) -> Type:
    """The Relay type of a graph input of sequence or optional type (see :func:`onnx_type`)."""
    return onnx_type(tp, name, (shapes or {}).get(name), strict=False)
