"""Types, shapes and type parameters (docs/architecture.md#text; semantics.parser, "Types").

:class:`TypeParser` reads ``float32``, ``Tensor[(d, ...), dtype]``, tuple
types, ``fn [A](T) -> U``, ``Ref[T]``/``ref(T)``, ADT calls ``List[T]``, type
variables in scope and ``_``; and the type parameter lists ``[A, n: Shape]``
(or ``<A>``) that bind them; ``int`` is TVM's spelling of ``int32`` (as a type
and as a tensor's dtype; as a type it reads as ``int32`` unless a type
parameter called ``int`` is in scope), and it prints as ``int32``. A dimension
is an integer, ``?`` or arithmetic over shape variables (SymPy, normalized by
:func:`semantics.shapes.normalize`).

Types nest to any depth (a 20,000-deep ``Ref[Ref[...]]`` or ``((...,),)``):
each nested type is a generator driven by :func:`semantics.visitor.run_recursive`
(the expression parser's mechanism), and :meth:`TypeParser.type_` is the
synchronous entry the other layers call. Dimension arithmetic stays behind the
nesting budget (:meth:`~semantics.parsing.base.ParserBase.nest`): SymPy itself
recurses on nested expressions, and real shapes are shallow.
"""

from __future__ import annotations

from typing import Any

import sympy

from semantics import dtypes, shapes
from semantics.parsing.base import ARG_END, RESERVED, Gen, ParserBase
from semantics.types import (
    FuncType,
    GlobalTypeVar,
    IncompleteType,
    Kind,
    RefType,
    TensorType,
    TupleType,
    Type,
    TypeCall,
    TypeVar,
)
from semantics.visitor import run_recursive

__all__ = ["TypeParser"]

_KINDS = {
    "Type": Kind.Type, "Shape": Kind.ShapeVar, "ShapeVar": Kind.ShapeVar,
    "BaseType": Kind.BaseType, "Constraint": Kind.Constraint, "Relation": Kind.Constraint,
    "AdtHandle": Kind.AdtHandle, "ADT": Kind.AdtHandle,
}


class TypeParser(ParserBase):
    """The parser layer for types, shapes and type parameter lists."""

    def type_params(self) -> tuple[TypeVar, ...]:
        """``[A, B: Shape]`` or ``<A>``; binds each in the type scope."""
        close = "]" if self.K[self.i] == "[" else ">"
        self.i += 1
        params: list[TypeVar] = []
        seen: set[str] = set()
        while self.K[self.i] != close:
            p_i = self.i
            name = self.check_name(p_i, "a type parameter name")
            self.i += 1
            if name in seen:
                raise self.error(f"duplicate type parameter {name}", p_i)
            seen.add(name)
            kind = Kind.Type
            if self.K[self.i] == ":":
                self.i += 1
                kind_name = self.V[self.i] if self.K[self.i] == "IDENT" else ""
                if kind_name not in _KINDS:
                    raise self.error(f"expected a kind ({', '.join(_KINDS)}), "
                                     f"found {self.toks.describe(self.i)}")
                kind = _KINDS[kind_name]
                self.i += 1
            tv = TypeVar(name, kind, span=self.span(p_i))
            self.bind_type(name, tv)
            params.append(tv)
            self.comma_or(close, "in a type parameter list")
        self.i += 1
        return tuple(params)

    def type_(self) -> Type:
        """A type at the current token (any depth: nested types are generators driven by
        :func:`~semantics.visitor.run_recursive`, so nesting costs no Python stack)."""
        i = self.i
        if self.K[i] == "IDENT":    # fast path: a scalar type, the commonest annotation
            name = self.V[i]
            if dtypes.is_dtype(name):
                self.i = i + 1
                return TensorType((), name, span=self.span(i))
        result: Type = run_recursive(self.type_gen())
        return result

    def type_gen(self) -> Gen:
        """The type at the current token; a nested type is ``yield self.type_gen()``."""
        K, V = self.K, self.V
        i = self.i
        k = K[i]
        if k == "IDENT":
            name = V[i]
            self.i = i + 1
            if dtypes.is_dtype(name):
                return TensorType((), name, span=self.span(i))
            stack = self.tenv.get(name)
            if stack:
                return stack[-1]
            if name == "int":   # TVM's spelling of int32 (String2DLDataType's default width)
                return TensorType((), "int32", span=self.span(i))
            if name == "Tensor":
                self.expect("[", "after `Tensor`")
                shape = self.shape()
                self.expect(",", "between the shape and the dtype of a tensor type")
                dtype = self.dtype()
                self.expect("]", "to end a tensor type")
                return TensorType(shape, dtype, span=self.span(i, self.i - 1))
            if name == "Ref":
                self.expect("[", "after `Ref`")
                value = yield self.type_gen()
                self.expect("]", "to end `Ref[...]`")
                return RefType(value, span=self.span(i, self.i - 1))
            if name == "_":
                return IncompleteType(span=self.span(i))
            if self.is_adt(name, i):
                args: list[Type] = []
                if K[self.i] == "[":
                    self.i += 1
                    while K[self.i] != "]":
                        args.append((yield self.type_gen()))
                        self.comma_or("]", "in the arguments of a type call")
                    self.i += 1
                return TypeCall(GlobalTypeVar(name, span=self.span(i)), tuple(args),
                                span=self.span(i, self.i - 1))
            if self.lookup_ctor(name, i) is not None:
                raise self.error(f"`{name}` is a constructor, not a type", i)
            raise self.error(f"unknown type `{name}`", i)
        if k == "(":
            self.i = i + 1
            if K[self.i] == ")":
                self.i += 1
                return TupleType((), span=self.span(i, self.i - 1))
            first = yield self.type_gen()
            if K[self.i] == ")":
                self.i += 1
                return first
            fields = [first]
            while K[self.i] == ",":
                self.i += 1
                if K[self.i] == ")":
                    break
                fields.append((yield self.type_gen()))
            self.expect(")", "to end a tuple type")
            return TupleType(tuple(fields), span=self.span(i, self.i - 1))
        if k == "fn":
            self.i = i + 1
            tmark = len(self.tundo)
            type_params = self.type_params() if K[self.i] in ("[", "<") else ()
            self.expect("(", "to start the parameter types of a function type")
            arg_types: list[Type] = []
            while K[self.i] != ")":
                arg_types.append((yield self.type_gen()))
                self.comma_or(")", "in the parameter types of a function type")
            self.i += 1
            self.expect("->", "after the parameter types of a function type")
            ret = yield self.type_gen()
            self.restore_types(tmark)
            return FuncType(tuple(arg_types), ret, type_params, span=self.span(i, self.i - 1))
        if k == "ref":
            self.i = i + 1
            self.expect("(", "after `ref` in a type")
            value = yield self.type_gen()
            self.expect(")", "to end `ref(...)`")
            return RefType(value, span=self.span(i, self.i - 1))
        raise self.error(f"expected a type, found {self.toks.describe(i)}", i)

    def dtype(self) -> str:
        i = self.i
        if self.K[i] == "IDENT" and self.V[i] == "int":   # TVM's spelling of int32
            self.i += 1
            return "int32"
        if self.K[i] != "IDENT" or not dtypes.is_dtype(self.V[i]):
            raise self.error(f"expected a dtype such as `float32`, found {self.toks.describe(i)}")
        self.i += 1
        return self.V[i]

    def shape(self) -> tuple[shapes.Dim, ...]:
        """``(d, ...)``: ``(10)`` and ``(10,)`` are both one dimension."""
        self.expect("(", "to start the shape of a tensor type")
        dims: list[shapes.Dim] = []
        while self.K[self.i] != ")":
            dims.append(self.dimension())
            self.comma_or(")", "in a shape")
        self.i += 1
        return tuple(dims)

    def dimension(self) -> shapes.Dim:
        start = self.i
        k = self.K[start]
        if self.K[start + 1] in ARG_END:
            if k == "?":
                self.i += 1
                return shapes.ANY
            if k == "NUM" and self.V[start].isdigit() and len(self.V[start]) < 19:
                self.i += 1
                return int(self.V[start])
        try:
            dim = shapes.normalize(self.dim_sum())
        except (TypeError, ValueError, ZeroDivisionError, AttributeError, OverflowError) as exc:
            raise self.error(f"invalid dimension: {exc}", start) from None
        if isinstance(dim, int):
            if dim < 0:
                raise self.error(f"negative dimension {dim}", start)
            return dim
        if isinstance(dim, sympy.Basic) and (dim.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo)
                                             or dim.is_number):
            raise self.error(f"invalid dimension {dim} (dimensions are integers)", start)
        return dim

    def dim_sum(self) -> Any:
        left = self.dim_product()
        while self.K[self.i] in ("+", "-"):
            op = self.K[self.i]
            self.i += 1
            right = self.dim_product()
            left = left + right if op == "+" else left - right
        return left

    def dim_product(self) -> Any:
        K = self.K
        left = self.dim_unary()
        while True:
            k = K[self.i]
            op_i = self.i
            if k in ("*", "/", "%"):
                self.i += 1
                right = self.dim_unary()
            elif k == "LOCAL":   # `n %2` lexes `%2` as a local name: it is `%` then `2`
                text = self.V[self.i][1:]
                self.i += 1
                k = "%"
                right = int(text) if text.isdigit() and len(text) < 20 else \
                    self.shape_variable(text, op_i)
            else:
                return left
            if k == "*":
                left = left * right
            elif isinstance(right, int) and right == 0:
                raise self.error("division by zero in a dimension", op_i)
            elif k == "/":
                left = sympy.Rational(left, right) if isinstance(left, int) and \
                    isinstance(right, int) else sympy.sympify(left) / right
            elif isinstance(left, int) and isinstance(right, int):
                left = left % right
            else:
                left = sympy.Mod(left, right)

    def dim_unary(self) -> Any:
        i = self.i
        if self.K[i] == "-":
            self.nest(i)
            try:
                self.i += 1
                return -self.dim_unary()
            finally:
                self.depth -= 1
        return self.dim_atom()

    def dim_atom(self) -> Any:
        K, V = self.K, self.V
        i = self.i
        k = K[i]
        if k == "NUM":
            text = V[i]
            digits = text[:-3] if text.endswith(("i64", "i32")) else text
            if not digits.isdigit() or len(digits) > 18:
                raise self.error(f"expected an integer dimension, found `{text}`", i)
            self.i += 1
            return int(digits)
        if k == "IDENT":
            name = V[i]
            self.i += 1
            if name in ("floor", "ceil") and K[self.i] == "(":
                self.nest(i)
                try:
                    self.i += 1
                    inner = self.dim_sum()
                    self.expect(")", f"to end `{name}(...)`")
                finally:
                    self.depth -= 1
                return sympy.floor(inner) if name == "floor" else sympy.ceiling(inner)
            return self.shape_variable(name, i)
        if k == "(":
            self.nest(i)
            try:
                self.i += 1
                inner = self.dim_sum()
                self.expect(")", "in a dimension")
            finally:
                self.depth -= 1
            return inner
        if k == "?":
            raise self.error("`?` must be a whole dimension, not part of an expression", i)
        raise self.error(f"expected a dimension (an integer, `?` or a shape variable), "
                         f"found {self.toks.describe(i)}", i)

    def shape_variable(self, name: str, i: int) -> sympy.Symbol:
        if name in RESERVED or dtypes.is_dtype(name):
            raise self.error(f"`{name}` cannot be a shape variable", i)
        return shapes.shape_var(name)
