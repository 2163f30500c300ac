"""Printing expressions and blocks: one unit per definition or top-level expression.

Part of the printer (:mod:`semantics.printer`, "Layout" and "Implementation").
:class:`PrintUnit` prints statements one per line with a *hole* before each, so a
shared node's graph binding lands in its block's hole when first met; ``let``
spines are loops and every premise is a generator driven by
:func:`semantics.visitor.run_recursive` (no Python recursion over expressions).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from semantics.errors import InternalError
from semantics.expr import (
    Call,
    Clause,
    Constant,
    Constructor,
    Expr,
    Function,
    GlobalVar,
    Grad,
    If,
    Let,
    Match,
    Op,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
    children,
)
from semantics.printing.literals import attr_text, scalar_literal
from semantics.printing.names import PrintContext
from semantics.printing.rope import BindingDef, BindingRef
from semantics.printing.sharing import LEAF_SET, SharingAnalysis
from semantics.printing.types import TypeSyntax

Gen = Generator[Any, Any, Any]


def _is_nullary_ctor_call(call: Call) -> bool:
    """``Nil`` — a call of a constructor without fields, printed (and parsed) as its name."""
    op = call.op
    return type(op) is Constructor and not op.inputs and not call.args and not call.attrs


# --- one printing unit (a definition or a top-level expression) ------------------------------

class PrintUnit(TypeSyntax, SharingAnalysis):
    """Prints one definition or expression: analyses, scopes, holes, names.

    Names and scopes come from :class:`~semantics.printing.names.Scopes`
    (through :class:`~semantics.printing.types.TypeSyntax`), the placement of
    graph bindings from :class:`~semantics.printing.sharing.SharingAnalysis`.

    Invariants while printing: ``holes[b]`` is the hole before the statement
    of block ``b`` being printed (for every open block ``b``); ``var_names``
    maps each variable in scope to a stack of names (innermost last) and
    ``scope_names`` counts the binders in scope per name.
    """

    def __init__(self, ctx: PrintContext, root: Expr | None):
        super().__init__(ctx)
        self.holes: dict[int, list[Any]] = {}
        self.block_indent: dict[int, int] = {}
        self.rec_var: dict[int, Var] = {}
        self.emitted: dict[int, BindingDef] = {}
        self.unbound: set[int] = set()
        self.mentions_memo: dict[int, dict[int, bool]] = {}
        self.counter = [0]
        self.bound: set[int] = set()
        self.block_of: dict[int, int] = {}
        self.own_block: dict[int, int] = {}
        self.opened: dict[int, tuple[int, ...]] = {}
        self.with_bindings: set[int] = set()
        self.referenced: set[int] = set()
        self._root = root
        if root is not None:
            self._analyze(root)

    # --- expressions ------------------------------------------------------------------------
    def leaf_text(self, e: Expr) -> str:
        cls = type(e)
        if cls is Var:
            names = self.var_names.get(id(e))
            if names:
                return "%" + names[-1]
            return self.var_text(e)  # type: ignore[arg-type]
        if cls is Op or cls is Constructor:
            return e.name  # type: ignore[attr-defined]
        if cls is GlobalVar:
            return "@" + e.name_hint  # type: ignore[attr-defined]
        data = e.data  # type: ignore[attr-defined]
        if data.ndim == 0:
            text = scalar_literal(data)
            if text is not None:
                return text
        return self.ctx.constant_ref(e)  # type: ignore[arg-type]

    def expr(self, e: Expr, out: list[Any], ind: int) -> Gen:
        """Print ``e`` in expression position (a graph reference if it is bound)."""
        key = id(e)
        if key in self.bound and key not in self.unbound:
            d = self.emitted.get(key)
            if d is None:
                d = yield self.emit(e)
            if d is not None:
                out.append(BindingRef(d))
                return
        yield from self.node(e, out, ind)

    def emit(self, e: Expr) -> Gen:
        """Print the graph binding of ``e`` into the hole of its block; None if it cannot be."""
        block = self.block_of[id(e)]
        rec = self.rec_var.get(block)
        if rec is not None and self.mentions(e, rec):
            self.unbound.add(id(e))
            return None
        hole = self.holes.get(block)
        if hole is None:
            raise InternalError("printer: a shared node's block is not open at its first use")
        ind = self.block_indent[block]
        text: list[Any] = []
        yield from self.node(e, text, ind)
        d = BindingDef(self.counter)
        hole.extend(("\n" + "  " * ind, d, " = ", text, ";"))
        self.emitted[id(e)] = d
        return d

    def operand(self, e: Expr, out: list[Any], ind: int) -> Gen:
        """Print ``e`` where a postfix operator follows (callee, projection target)."""
        cls = type(e)
        if cls is Var or cls is GlobalVar or cls is Op or cls is Constructor:
            out.append(self.leaf_text(e))
            return
        key = id(e)
        if key in self.bound and key not in self.unbound:
            d = self.emitted.get(key)
            if d is None:
                d = yield self.emit(e)
            if d is not None:
                out.append(BindingRef(d))
                return
        if cls is Constant or cls is Function or cls is If or cls is Match or \
                (cls is Call and _is_nullary_ctor_call(e)):  # type: ignore[arg-type]
            out.append("(")
            yield from self.node(e, out, ind)
            out.append(")")
        else:
            yield from self.node(e, out, ind)

    def node(self, e: Expr, out: list[Any], ind: int) -> Gen:
        """Print the syntax of ``e`` itself; non-leaf children go through :meth:`expr`."""
        cls = type(e)
        leaves = LEAF_SET
        if cls is Call:
            op = e.op  # type: ignore[attr-defined]
            args = e.args  # type: ignore[attr-defined]
            attrs = e.attrs  # type: ignore[attr-defined]
            op_cls = type(op)
            if op_cls is Op:
                out.append(op.name)
            elif op_cls is Constructor and _is_nullary_ctor_call(e):  # type: ignore[arg-type]
                out.append(op.name)
                return
            elif op_cls is Var or op_cls is GlobalVar or op_cls is Constructor:
                out.append(self.leaf_text(op))
            else:
                yield self.operand(op, out, ind)
            out.append("(")
            first = True
            for a in args:
                if not first:
                    out.append(", ")
                first = False
                if type(a) in leaves:
                    out.append(self.leaf_text(a))
                else:
                    yield self.expr(a, out, ind)
            if attrs:
                if args:
                    out.append(", ")
                out.append(", ".join(f"{k}={attr_text(v)}" for k, v in attrs.items()))
            out.append(")")
        elif cls in leaves:
            out.append(self.leaf_text(e))
        elif cls is Tuple:
            fields = e.fields  # type: ignore[attr-defined]
            out.append("(")
            first = True
            for a in fields:
                if not first:
                    out.append(", ")
                first = False
                if type(a) in leaves:
                    out.append(self.leaf_text(a))
                else:
                    yield self.expr(a, out, ind)
            out.append(",)" if len(fields) == 1 else ")")
        elif cls is TupleGetItem:
            yield self.operand(e.tuple_value, out, ind)  # type: ignore[attr-defined]
            out.append(f".{e.index}")  # type: ignore[attr-defined]
        elif cls is Let:
            out.append("(")
            yield self.block(e, self.own_block[id(e)], out, ind + 1, own=True)
            out.append("\n" + "  " * ind + ")")
        elif cls is Function:
            yield self.function("fn ", e, out, ind)  # type: ignore[arg-type]
        elif cls is If:
            b1, b2 = self.opened[id(e)]
            out.append("if (")
            yield self.expr(e.cond, out, ind)  # type: ignore[attr-defined]
            out.append(") {")
            yield self.block(e.true_branch, b1, out, ind + 1)  # type: ignore[attr-defined]
            out.append("\n" + "  " * ind + "} else {")
            yield self.block(e.false_branch, b2, out, ind + 1)  # type: ignore[attr-defined]
            out.append("\n" + "  " * ind + "}")
        elif cls is Match:
            yield self.match(e, out, ind)  # type: ignore[arg-type]
        elif cls is RefCreate or cls is RefRead or cls is Grad:
            out.append("ref(" if cls is RefCreate else "ref_read(" if cls is RefRead else "grad(")
            yield self.expr(children(e)[0], out, ind)
            out.append(")")
        elif cls is RefWrite:
            out.append("ref_write(")
            yield self.expr(e.ref, out, ind)  # type: ignore[attr-defined]
            out.append(", ")
            yield self.expr(e.value, out, ind)  # type: ignore[attr-defined]
            out.append(")")
        else:
            raise TypeError(f"pretty: not an expression: {cls.__name__}")

    def function(self, head: str, fn: Function, out: list[Any], ind: int) -> Gen:
        """``fn [A](%x: T, attr=v) -> R { body }`` (``head`` is ``"fn "`` or ``"def @f"``)."""
        tparams = self.type_params_text(fn.type_params)
        params: list[str] = []
        for p in fn.params:
            text = "%" + self.bind_var(p)
            if p.type_annotation is not None:
                text += ": " + self.type_text(p.type_annotation)
            params.append(text)
        params.extend(f"{k}={attr_text(v)}" for k, v in fn.attrs.items())
        out.append(f"{head}{tparams}({', '.join(params)}) ")
        if fn.ret_type is not None:
            out.append(f"-> {self.type_text(fn.ret_type)} ")
        out.append("{")
        yield self.block(fn.body, self.opened[id(fn)][0], out, ind + 1)
        out.append("\n" + "  " * ind + "}")
        for p in reversed(fn.params):
            self.unbind_var(p)
        for tv in reversed(fn.type_params):
            self.unbind_type_var(tv)

    def match(self, m: Match, out: list[Any], ind: int) -> Gen:
        out.append("match (" if m.complete else "match? (")
        yield self.expr(m.data, out, ind)
        out.append(") {")
        for clause, cb in zip(m.clauses, self.opened[id(m)]):
            out.append("\n" + "  " * (ind + 1))
            yield self.clause(clause, cb, out, ind + 1)
            out.append(",")
        out.append("\n" + "  " * ind + "}")

    def clause(self, clause: Clause, cb: int, out: list[Any], ind: int) -> Gen:
        bound = self.pattern(clause.lhs, out)
        out.append(" => ")
        rhs = clause.rhs
        if cb in self.with_bindings or (type(rhs) is Let and id(rhs) not in self.bound):
            out.append("{")
            yield self.block(rhs, cb, out, ind + 1)
            out.append("\n" + "  " * ind + "}")
        else:
            hole: list[Any] = []
            self.holes[cb] = hole
            self.block_indent[cb] = ind
            yield self.expr(rhs, out, ind)
            del self.holes[cb]
            if hole:
                raise InternalError("printer: a binding landed in an inline clause")
        for v in reversed(bound):
            self.unbind_var(v)

    def clause_alone(self, clause: Clause, out: list[Any]) -> Gen:
        """A clause printed on its own (``pretty(clause)``); the unit's root is a match of it."""
        hole: list[Any] = []
        self.holes[0] = hole
        self.block_indent[0] = 0
        out.append(hole)
        out.append("\n")
        yield self.clause(clause, self.opened[id(self._root)][0], out, 0)
        del self.holes[0]

    # --- blocks -----------------------------------------------------------------------------
    def block(self, e: Expr, block: int, out: list[Any], ind: int, own: bool = False) -> Gen:
        """The statements of a block: its let spine, with a hole before each statement.

        ``own`` says that ``e`` is a ``let`` printed as its own block (in expression
        position or as a graph binding), so it starts the spine even if it is shared.
        """
        self.block_indent[block] = ind
        nl = "\n" + "  " * ind
        lets: list[Var] = []
        bound = self.bound
        while True:
            hole: list[Any] = []
            out.append(hole)
            self.holes[block] = hole
            if type(e) is not Let or (id(e) in bound and not own):
                out.append(nl)
                yield self.expr(e, out, ind)
                break
            var, value = e.var, e.value
            out.append(nl)
            if var.name_hint == "_" and var.type_annotation is None and \
                    id(var) not in self.referenced:
                yield self.expr(value, out, ind)
                out.append(";")
                e = e.body
                own = False
                continue
            name = self.bind_var(var)
            lets.append(var)
            out.append(f"let %{name}")
            if var.type_annotation is not None:
                out.append(": " + self.type_text(var.type_annotation))
            out.append(" = ")
            if type(value) is Function:
                self.rec_var[block] = var
                yield self.expr(value, out, ind)
                del self.rec_var[block]
            else:
                # The value does not see its own variable: hide the name while printing it.
                self.var_names[id(var)].pop()
                if not self.var_names[id(var)]:
                    del self.var_names[id(var)]
                yield self.expr(value, out, ind)
                self.var_names.setdefault(id(var), []).append(name)
            out.append(";")
            e = e.body
            own = False
        del self.holes[block]
        for v in reversed(lets):
            self.unbind_var(v)

    def free_var_declarations(self, root: Expr, out: list[Any], ind: int,
                              every: bool = False) -> None:
        """``free_var %x: T;`` for annotated free variables first used in this unit; with
        ``every`` (a module's definitions: the parser refuses undeclared locals there) also
        ``free_var %x;`` for unannotated ones."""
        found = self.ctx.free_by_root.get(id(root))
        if found is None:
            self.ctx.name_free_vars([root])
            found = self.ctx.free_by_root[id(root)]
        nl = "\n" + "  " * ind
        for v in found:
            if (v.type_annotation is None and not every) or id(v) in self.ctx.declared:
                continue
            self.ctx.declared.add(id(v))
            if v.type_annotation is None:
                out.append(f"{nl}free_var {self.var_text(v)};")
            else:
                out.append(f"{nl}free_var {self.var_text(v)}: "
                           f"{self.type_text(v.type_annotation)};")

    def top_expression(self, out: list[Any]) -> Gen:
        root = self._root
        assert root is not None
        self.free_var_declarations(root, out, 0)
        yield self.block(root, 0, out, 0)

    def definition(self, name: str, fn: Function, out: list[Any]) -> Gen:
        decls: list[Any] = []
        self.free_var_declarations(fn, decls, 1, every=True)
        tparams = self.type_params_text(fn.type_params)
        params: list[str] = []
        for p in fn.params:
            text = "%" + self.bind_var(p)
            if p.type_annotation is not None:
                text += ": " + self.type_text(p.type_annotation)
            params.append(text)
        params.extend(f"{k}={attr_text(v)}" for k, v in fn.attrs.items())
        out.append(f"def @{name}{tparams}({', '.join(params)}) ")
        if fn.ret_type is not None:
            out.append(f"-> {self.type_text(fn.ret_type)} ")
        out.append("{")
        out.append(decls)
        yield self.block(fn.body, self.opened[id(fn)][0], out, 1)
        out.append("\n}")
        for p in reversed(fn.params):
            self.unbind_var(p)
        for tv in reversed(fn.type_params):
            self.unbind_type_var(tv)
