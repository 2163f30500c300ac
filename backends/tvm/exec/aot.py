"""Ahead-of-time compilation: a Relay module as a generated Python module (issue 14 §2c).

The paper's §4.7: instead of interpreting the program, compile it ahead of time into
host code that calls the kernels directly. Our host language is Python: :func:`generate`
turns the fused module into the source of a Python module whose ``build_program``
returns one Python function per global. In the generated code

* every ``Primitive=1`` call is a direct call of its kernel, ``K[i](a, b)``;
* a ``let`` is an assignment, a tuple a tuple, a projection an index;
* ``if`` is a Python ``if``; ``match`` is an ``if``/``elif`` chain of type-and-tag tests
  (``type(v) is CV and v.name == "Cons"``) that bind the fields to locals directly
  (nested patterns test their access paths in one conjunction), ending in the
  non-exhaustive-match error;
* a function literal is a nested ``def`` wrapped as an
  :class:`~backends.tvm.exec.aot_runtime.AotClosure` (Python's closures capture the Relay
  variables: each is assigned exactly once); a ``let``-bound one that is called directly is
  called as the Python function;
* calls of globals are direct Python calls; a **self tail call** of a global or of a
  ``let``-bound closure becomes a ``while True`` loop (parameters reassigned), so loops
  run in constant Python stack — unless the body makes closures (which would then see
  the reassigned parameters);
* references are :class:`~interpreter.values.RefValue` cells; graph sharing is
  respected as in the VM: a shared node is evaluated once per activation (a local
  initialized to ``None`` and tested where its first evaluation does not dominate).

Deep non-tail recursion (up to ``max_depth`` nested calls work: docs/architecture.md#robustness).
Direct code uses Python's stack for non-tail calls (and for tail calls other than a
function's calls of itself), which ends after about a thousand nested calls. So the module
holds the program twice:

* ``build_program``: the direct code above (the fast path);
* ``build_trampolined``: the same program where every function that calls a Relay
  function is a **generator function**: a non-tail call is ``(yield callee(args))``, a tail
  call ``(yield TL(callee(args)))``, a call of a computed value ``(yield R.gcall(f, args,
  node))``; functions that call no Relay function stay plain.
  :meth:`~backends.tvm.exec.aot_runtime.Runtime.drive` runs the generators on an explicit
  stack (a trampoline), counting nested non-tail calls exactly as the oracle does ("stack
  exhausted" beyond ``max_depth``), with tail calls replacing the caller's activation.
  About 1 µs more per call than direct code.

:meth:`AotRunner.run` runs the direct code; when Python's stack runs out (a
``RecursionError``) it runs the call again as trampolined code. Running again is sound
because a program that writes no reference is deterministic and its partial run left no
trace; a program with reference writes (``:=`` anywhere in the module) always runs as
trampolined code, and a run that called a function value made outside the program (an
argument closure, whose body may write references) is not repeated: it ends in "stack
exhausted". Python's parser still limits nesting of ``if``/``match`` in one
function to about a hundred levels (the build says to use the VM then).

Kernels, constants and constructors cannot be spelled in source: the generated module
refers to them by index into tables that :func:`tables` rebuilds from the module in a
fixed order (so a saved ``aot.py`` is imported with the kernels of the saved program).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from backends.tvm.exec.aot_runtime import Runtime, Tail
from backends.tvm.exec.aot_saved import import_saved_program
from backends.tvm.exec.vm import (
    P_BIND,
    P_CTOR,
    P_TUPLE,
    constant_value,
    is_primitive_function,
    pattern_plan,
)
from backends.tvm.fallback import OpKernel
from backends.tvm.kernel_table import KernelTable
from interpreter.values import (
    ConstructorValue,
    RefValue,
)
from semantics.errors import (
    InternalError,
    RelayRuntimeError,
    RelayTypeError,
)
from semantics.expr import (
    Call,
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
    Pattern,
    RefCreate,
    RefRead,
    RefWrite,
    Tuple,
    TupleGetItem,
    Var,
)
from semantics.module import IRModule
from semantics.visitor import post_order, pre_order, run_recursive, shared

__all__ = ["AotRunner", "generate", "tables"]


# --- tables -----------------------------------------------------------------------------------

def tables(mod: IRModule) -> tuple[list[Function], list[Any], list[Constructor], list[Any]]:
    """The module's primitive functions, constants, constructors and nodes, in a fixed order.

    The order is the generated code's numbering: globals by name, each walked in
    ``pre_order`` (primitive functions not entered); ``nodes`` are the Op calls, matches,
    calls, grads and function literals the code refers to (attributes, spans, closures).
    """
    prims: list[Function] = []
    consts: list[Any] = []
    nodes: list[Any] = []
    seen: set[int] = set()
    for name in sorted(mod.functions):
        for n in pre_order(mod.functions[name], descend=lambda x: not is_primitive_function(x)):
            if id(n) in seen:
                continue
            seen.add(id(n))
            if type(n) is Function and is_primitive_function(n):
                prims.append(n)
            elif type(n) is Constant:
                consts.append(n.data)
            elif type(n) in (Call, Match, Grad) or type(n) is Function:
                nodes.append(n)
    ctors = [mod.constructors[c] for c in sorted(mod.constructors)]
    return prims, consts, ctors, nodes


# --- code generation --------------------------------------------------------------------------

class _Fn:
    """Per-Python-function generation state."""

    def __init__(self, gen: _Gen, body: Expr, indent: int):
        self.gen = gen
        self.indent = indent
        self.shared = {id(n) for n in shared(body, descend=lambda n: type(n) is not Function)
                       if not isinstance(n, (Var, GlobalVar, Op, Constructor, Constant))}
        self.blocks: list[dict[int, str]] = [{}]
        self.maybe: dict[int, str] = {}
        self.init_at = len(gen.lines)  # where the None-initializations go
        self.inits: list[str] = []
        self.loop: tuple[Any, list[str]] | None = None  # (self callee, param names)
        self.yields = False   # trampolined code: the body yields (a generator function)

    def line(self, text: str) -> None:
        self.gen.lines.append("    " * self.indent + text)

    def known(self, node: Expr) -> str | None:
        for block in reversed(self.blocks):
            name = block.get(id(node))
            if name is not None:
                return name
        return None


class _Gen:
    def __init__(self, mod: IRModule):
        self.mod = mod
        self.mode = "direct"     # or "gen": trampolined code (see the module docstring)
        self.lines: list[str] = []
        self.n = 0
        prims, consts, ctors, nodes = tables(mod)
        self.prim = {id(f): i for i, f in enumerate(prims)}
        self.const = {id(c): i for i, c in enumerate(consts)}
        self.ctor = {c.name: i for i, c in enumerate(ctors)}
        self.node = {id(x): i for i, x in enumerate(nodes)}
        self.const_nodes: dict[int, int] = {}
        self.globals = {name: f"g{i}" for i, name in enumerate(sorted(mod.functions))}
        self.var_names: dict[Var, str] = {}
        self.direct: dict[Var, tuple[str, Function, bool]] = {}
        self.counts = (len(prims), len(consts), len(ctors), len(nodes))

    def fresh(self, prefix: str = "t") -> str:
        self.n += 1
        return f"{prefix}{self.n}"

    def bind(self, v: Var) -> str:
        name = self.fresh("v")
        self.var_names[v] = name
        return name


def generate(mod: IRModule) -> str:
    """The Python source of ``mod`` (see the module docstring): ``build_program`` (direct
    code) and ``build_trampolined`` (the same program as generator functions)."""
    gen = _Gen(mod)
    lines = gen.lines
    lines += [
        '"""Generated by backends.tvm.exec.aot from a Relay module; do not edit."""',
        "",
        f"COUNTS = {gen.counts!r}",
    ]
    for mode, head in (("direct", "build_program(K, C, CT, O, M, R, RefValue, CV, AotClosure)"),
                       ("gen", "build_trampolined(K, C, CT, O, M, R, RefValue, CV, AotClosure, "
                               "TL)")):
        gen.mode = mode
        gen.direct.clear()
        lines += ["", "", f"def {head}:", "    N = M", "    D = R.depth",
                  "    MAX_DEPTH = R.max_depth", "    G = {}"]
        for name in sorted(mod.functions):
            fn = mod.functions[name]
            is_gen = _function(gen, fn, gen.globals[name], indent=1,
                               self_callee=("global", name), force_gen=mode == "gen")
            lines.append(f"    G[{name!r}] = AotClosure({gen.globals[name]}, "
                         f"N[{_fn_index(gen, fn)}], {'@' + name!r}, {is_gen})")
        lines.append("    return G")
    return "\n".join(lines) + "\n"


def _fn_index(gen: _Gen, fn: Function) -> int:
    return gen.node[id(fn)]


def _function(gen: _Gen, fn: Function, pyname: str, indent: int,
              self_callee: tuple[str, Any] | None, force_gen: bool = False) -> bool:
    """Emit ``def pyname`` for ``fn``; whether it is a generator function (trampolined code:
    its body yields a call, or ``force_gen``)."""
    params = [gen.bind(p) for p in fn.params]
    gen.lines.append("    " * indent + f"def {pyname}({', '.join(params)}):")
    head = len(gen.lines)
    if gen.mode == "direct":
        gen.lines.append("    " * (indent + 1) + "D[0] += 1")
        gen.lines.append("    " * (indent + 1) + "if D[0] > MAX_DEPTH:")
        gen.lines.append("    " * (indent + 2) + "R.exhausted()")
    st = _Fn(gen, fn.body, indent + 1)
    makes_closures = any(
        type(n) is Function and not is_primitive_function(n)
        for n in post_order(fn.body, descend=lambda n: not is_primitive_function(n)))
    if self_callee is not None and not makes_closures and _has_self_tail_call(
            gen, fn.body, self_callee):
        st.loop = (self_callee, params)
        st.line("while True:")
        st.indent += 1
    st.init_at = len(gen.lines)
    init_indent = st.indent
    run_recursive(_tail(st, fn.body))
    if st.inits:
        pad = "    " * init_indent
        gen.lines[st.init_at:st.init_at] = [pad + f"{name} = None" for name in st.inits]
    if gen.mode == "direct":
        return False
    pad = "    " * (indent + 1)
    if st.yields:
        return True
    if force_gen:
        gen.lines[head:head] = [pad + "if False:", pad + "    yield"]
        return True
    # A plain function of trampolined code (it calls no Relay function): the caller's
    # activation is the driver's depth; this call is one more.
    gen.lines[head:head] = [pad + "if D[0] >= MAX_DEPTH:", pad + "    R.exhausted()"]
    return False


def _leave(st: _Fn) -> None:
    """The depth bookkeeping of a direct function's return (the driver does it for
    trampolined code)."""
    if st.gen.mode == "direct":
        st.line("D[0] -= 1")


def _has_self_tail_call(gen: _Gen, body: Expr, callee: tuple[str, Any]) -> bool:
    stack = [body]
    while stack:
        e = stack.pop()
        t = type(e)
        if t is Let:
            stack.append(e.body)  # type: ignore[attr-defined]
        elif t is If:
            stack += [e.true_branch, e.false_branch]  # type: ignore[attr-defined]
        elif t is Match:
            stack += [c.rhs for c in e.clauses]  # type: ignore[attr-defined]
        elif t is Call and _is_self(gen, e.op, callee):  # type: ignore[attr-defined]
            return True
    return False


def _is_self(gen: _Gen, op: Any, callee: tuple[str, Any] | None) -> bool:
    if callee is None:
        return False
    kind, what = callee
    if kind == "global":
        return type(op) is GlobalVar and op.name_hint == what
    return op is what


def _tail(st: _Fn, e: Expr) -> Generator[Any, Any, None]:
    gen = st.gen
    while True:
        t = type(e)
        if t is Let:
            yield from _bind(st, e)  # type: ignore[arg-type]
            e = e.body  # type: ignore[attr-defined]
            continue
        if t is If and id(e) not in st.shared:
            c = yield _expr(st, e.cond)  # type: ignore[attr-defined]
            st.line(f"if {c}:")
            yield from _branch(st, e.true_branch, None)  # type: ignore[attr-defined]
            st.line("else:")
            yield from _branch(st, e.false_branch, None)  # type: ignore[attr-defined]
            return
        if t is Match and id(e) not in st.shared:
            yield from _match(st, e, None)  # type: ignore[arg-type]
            return
        if isinstance(e, Call) and st.loop is not None and _is_self(gen, e.op, st.loop[0]) \
                and id(e) not in st.shared:
            args = []
            for a in e.args:
                args.append((yield _expr(st, a)))
            params = st.loop[1]
            if params:
                st.line(f"{', '.join(params)} = {', '.join(args)}")    # one name: no tuple
            st.line("continue")
            return
        if t is Call and id(e) not in st.shared:
            # A tail call: this activation ends first (tail calls do not count as depth).
            text, calls_function = yield from _call(st, e, tail=True)  # type: ignore[arg-type]
            if calls_function:
                _leave(st)
                st.line(f"return {text}")
                return
            r = _assign(st, text)
        else:
            r = yield _expr(st, e)
        _leave(st)
        st.line(f"return {r}")
        return


def _branch(st: _Fn, e: Expr, result: str | None) -> Generator[Any, Any, None]:
    """A nested block: the tail (``result`` None) or an assignment to ``result``."""
    st.indent += 1
    st.blocks.append({})
    mark = len(st.gen.lines)
    if result is None:
        yield _tail(st, e)
    else:
        r = yield _expr(st, e)
        st.line(f"{result} = {r}")
    if len(st.gen.lines) == mark:
        st.line("pass")
    st.maybe.update(st.blocks.pop())
    st.indent -= 1


def _bind(st: _Fn, e: Let) -> Generator[Any, Any, None]:
    gen = st.gen
    if type(e.value) is Function and not is_primitive_function(e.value):
        name = gen.bind(e.var)
        pyname = gen.fresh("f")
        is_gen = _function(gen, e.value, pyname, st.indent, self_callee=("var", e.var))
        st.line(f"{name} = AotClosure({pyname}, N[{_fn_index(gen, e.value)}], "
                f"{'%' + e.var.name_hint!r}, {is_gen})")
        gen.direct[e.var] = (pyname, e.value, is_gen)
        return
    r = yield _expr(st, e.value)
    gen.var_names[e.var] = r


def _expr(st: _Fn, e: Expr) -> Generator[Any, Any, str]:
    gen = st.gen
    if isinstance(e, Var):
        name = gen.var_names.get(e)
        if name is None:
            raise InternalError(f"aot: unbound variable %{e.name_hint}")
        return name
    if id(e) not in st.shared:
        return (yield _compute(st, e))
    known = st.known(e)
    if known is not None:
        return known
    target = st.maybe.get(id(e))
    if target is not None:
        st.line(f"if {target} is None:")
        st.indent += 1
        r = yield _compute(st, e)
        st.line(f"{target} = {r}")
        st.indent -= 1
    else:
        value = yield _compute(st, e)
        # A register of its own (the value may be a parameter's or a binding's name).
        target = gen.fresh()
        st.line(f"{target} = {value}")
        st.inits.append(target)
    st.blocks[-1][id(e)] = target
    return target


def _assign(st: _Fn, text: str) -> str:
    name = st.gen.fresh()
    st.line(f"{name} = {text}")
    return name


def _compute(st: _Fn, e: Expr) -> Generator[Any, Any, str]:
    gen = st.gen
    t = type(e)
    if t is Let:
        while isinstance(e, Let):
            yield from _bind(st, e)
            e = e.body
        return (yield _expr(st, e))
    if t is Constant:
        return f"C[{gen.const[id(e.data)]}]"  # type: ignore[attr-defined]
    if t is GlobalVar:
        if e.name_hint not in gen.mod.functions:  # type: ignore[attr-defined]
            return _assign(st, f"R.fail('undefined global @{e.name_hint}', None)")  # type: ignore
        return f"G[{e.name_hint!r}]"  # type: ignore[attr-defined]
    if t is Op:
        return _assign(st, f"R.op_value({e.name!r})")  # type: ignore[attr-defined]
    if t is Constructor:
        i = gen.ctor[e.name]  # type: ignore[attr-defined]
        if e.inputs:  # type: ignore[attr-defined]
            return _assign(st, f"R.ctor_function(CT[{i}])")
        return _assign(st, f"CV({e.name!r}, (), CT[{i}])")  # type: ignore[attr-defined]
    if t is Function:
        pyname = gen.fresh("f")
        is_gen = _function(gen, e, pyname, st.indent, self_callee=None)  # type: ignore[arg-type]
        index = _fn_index(gen, e)  # type: ignore[arg-type]
        return _assign(st, f"AotClosure({pyname}, N[{index}], None, {is_gen})")
    if t is Call:
        text, _ = yield from _call(st, e)  # type: ignore[arg-type]
        return _assign(st, text)
    if t is Tuple:
        fields = []
        for f in e.fields:  # type: ignore[attr-defined]
            fields.append((yield _expr(st, f)))
        return _assign(st, "(" + "".join(f + ", " for f in fields) + ")")
    if t is TupleGetItem:
        src = yield _expr(st, e.tuple_value)  # type: ignore[attr-defined]
        return _assign(st, f"{src}[{e.index}]")  # type: ignore[attr-defined]
    if t is If:
        c = yield _expr(st, e.cond)  # type: ignore[attr-defined]
        r = gen.fresh()
        st.line(f"if {c}:")
        yield from _branch(st, e.true_branch, r)  # type: ignore[attr-defined]
        st.line("else:")
        yield from _branch(st, e.false_branch, r)  # type: ignore[attr-defined]
        return r
    if t is Match:
        r = gen.fresh()
        yield from _match(st, e, r)  # type: ignore[arg-type]
        return r
    if t is RefCreate:
        v = yield _expr(st, e.value)  # type: ignore[attr-defined]
        return _assign(st, f"RefValue({v})")
    if t is RefRead:
        v = yield _expr(st, e.ref)  # type: ignore[attr-defined]
        return _assign(st, f"{v}.value")
    if t is RefWrite:
        ref = yield _expr(st, e.ref)  # type: ignore[attr-defined]
        v = yield _expr(st, e.value)  # type: ignore[attr-defined]
        st.line(f"{ref}.value = {v}")
        return "()"
    if t is Grad:
        raise RelayTypeError("aot: grad(...) is expanded at run time, which generated code "
                             "cannot do; build with executor=\"vm\"", e.span)
    raise InternalError(f"aot: cannot compile a {t.__name__}")


def _call(st: _Fn, e: Call, tail: bool = False) -> Generator[Any, Any, tuple[str, bool]]:
    """The call as a Python expression, and whether it calls a Relay function.

    In trampolined code a call of a generator function is ``(yield callee(args))`` (in tail
    position ``(yield TL(callee(args)))``) and a call of a computed value goes through
    ``R.gcall``/``R.gtail``.
    """
    gen = st.gen
    op = e.op
    args: list[str] = []
    if is_primitive_function(op):
        for a in e.args:
            args.append((yield _expr(st, a)))
        return f"K[{gen.prim[id(op)]}]({', '.join(args)})", False
    if type(op) is Op:
        for a in e.args:
            args.append((yield _expr(st, a)))
        return f"O[{gen.node[id(e)]}]({', '.join(args)})", False
    if type(op) is Constructor and len(e.args) == len(op.inputs):
        for a in e.args:
            args.append((yield _expr(st, a)))
        fields = "(" + "".join(a + ", " for a in args) + ")"
        return f"CV({op.name!r}, {fields}, CT[{gen.ctor[op.name]}])", False
    if type(op) is GlobalVar and op.name_hint in gen.mod.functions:
        for a in e.args:
            args.append((yield _expr(st, a)))
        return _yielding(st, f"{gen.globals[op.name_hint]}({', '.join(args)})", tail), True
    if type(op) is Var and op in gen.direct:
        pyname, fn, is_gen = gen.direct[op]
        for a in e.args:
            args.append((yield _expr(st, a)))
        if len(args) == len(fn.params):
            text = f"{pyname}({', '.join(args)})"
            return (_yielding(st, text, tail) if is_gen else text), True
        f = gen.var_names[op]
    else:
        f = yield _expr(st, op)
        for a in e.args:
            args.append((yield _expr(st, a)))
    tup = "(" + "".join(a + ", " for a in args) + ")"
    if gen.mode == "gen":
        st.yields = True
        return f"(yield R.{'gtail' if tail else 'gcall'}({f}, {tup}, "\
               f"M[{gen.node[id(e)]}]))", True
    return f"R.call({f}, {tup}, M[{gen.node[id(e)]}])", True


def _yielding(st: _Fn, call: str, tail: bool) -> str:
    """A call of a generator function of trampolined code (plain ``call`` in direct code)."""
    if st.gen.mode != "gen":
        return call
    st.yields = True
    return f"(yield TL({call}))" if tail else f"(yield {call})"


def _match(st: _Fn, e: Match, result: str | None) -> Generator[Any, Any, None]:
    gen = st.gen
    v = yield _expr(st, e.data)
    if not v.isidentifier():
        v = _assign(st, v)
    keyword = "if"
    for clause in e.clauses:
        cond, binds = _pattern_test(gen, clause.lhs, v)
        st.line(f"{keyword} {cond}:")
        keyword = "elif"
        st.indent += 1
        for line in binds:
            st.line(line)
        st.indent -= 1
        yield from _branch(st, clause.rhs, result)
    st.line("else:")
    st.indent += 1
    st.line(f"R.match_fail({v}, M[{gen.node[id(e)]}])")
    if result is not None:
        st.line(f"{result} = None")
    st.indent -= 1


def _pattern_test(gen: _Gen, p: Pattern, v: str) -> tuple[str, list[str]]:
    """A Python condition testing ``v`` against ``p`` and the assignments binding its vars.

    Nested patterns become one conjunction over access paths (``v.fields[1].fields[0]``);
    ``and`` evaluates left to right, so each path is read only after its parent's test.
    """
    parent_kind: dict[tuple[int, ...], int] = {}
    tests: list[str] = []
    binds: list[str] = []
    access: dict[tuple[int, ...], str] = {(): v}
    for kind, path, what in pattern_plan(p):
        if path:
            parent = access[path[:-1]]
            # The parent's step came first: it is a constructor (fields) or a tuple.
            access[path] = (f"{parent}.fields[{path[-1]}]" if parent_kind[path[:-1]] == P_CTOR
                            else f"{parent}[{path[-1]}]")
        text = access[path]
        if kind == P_BIND:
            binds.append(f"{gen.bind(what)} = {text}")
        elif kind == P_CTOR:
            tests.append(f"type({text}) is CV and {text}.name == {what[0]!r}")
        elif kind == P_TUPLE:
            tests.append(f"type({text}) is tuple and len({text}) == {what[0]}")
        parent_kind[path] = kind
    return (" and ".join(tests) or "True"), binds


# --- running ----------------------------------------------------------------------------------

class AotRunner:
    """The AoT executor behind an :class:`~backends.tvm.exec.executable.Executable`.

    Args:
        mod: the fused, type-checked module.
        table: the kernel table (kernels resolved in :func:`tables` order).
        max_depth: the bound on nested non-tail calls ("stack exhausted" beyond it).
        source_path: a saved ``aot.py`` to import instead of generating the source.
    Attributes:
        pure: the module writes no reference (runs start in direct code).
        restarts: runs repeated as trampolined code after Python's stack ran out.
    """

    def __init__(self, mod: IRModule, table: KernelTable, max_depth: int = 100_000,
                 source_path: str | None = None):
        self.mod = mod
        gen_counts = None
        namespace: dict[str, Any]
        if source_path is not None:
            self.source, namespace = import_saved_program(source_path)
        else:
            self.source = generate(mod)
            namespace = {"__name__": "relay_aot_program"}
            try:
                code = compile(self.source, "<relay-aot>", "exec")
            except (SyntaxError, RecursionError, MemoryError) as exc:
                raise RelayTypeError(
                    f"aot: the generated Python module does not compile ({type(exc).__name__}: "
                    f"{exc}); the program is nested too deeply for Python's parser: build with "
                    "executor=\"vm\"") from None
            exec(code, namespace)
        prims, consts, ctors, nodes = tables(mod)
        gen_counts = (len(prims), len(consts), len(ctors), len(nodes))
        if namespace.get("COUNTS") != gen_counts:
            raise RelayRuntimeError("the saved AoT module does not fit the saved program")
        kernels = [table.kernel_for(f) for f in prims]
        consts = [constant_value(c) for c in consts]
        op_kernels: dict[int, Any] = {}
        for i, n in enumerate(nodes):
            if type(n) is Call and type(n.op) is Op:
                op_kernels[i] = OpKernel(n.op.name, n.attrs)
        if "build_trampolined" not in namespace:
            raise RelayRuntimeError("the saved AoT module was generated by an older version "
                                    "(no trampolined code): build it again")
        runtime = self.runtime = Runtime(mod, max_depth)
        self.closures = namespace["build_program"](
            kernels, consts, ctors, op_kernels, nodes, runtime, RefValue, ConstructorValue,
            runtime.closure)
        self.trampolined = namespace["build_trampolined"](
            kernels, consts, ctors, op_kernels, nodes, runtime, RefValue, ConstructorValue,
            runtime.closure, Tail)
        self.pure = not any(type(n) is RefWrite for fn in mod.functions.values()
                            for n in post_order(fn))
        self.restarts = 0   # runs restarted in trampolined code (tests, benchmarks)

    def run(self, name: str, values: list[Any]) -> Any:
        """Run the global ``name``: direct code first when the program writes no reference,
        restarted as trampolined code when Python's stack runs out; trampolined code at once
        for a program with reference writes (see the module docstring)."""
        runtime = self.runtime
        if self.pure:
            runtime.depth[0] = 0
            runtime.foreign = False
            try:
                return self.closures[name].fn(*values)
            except RecursionError:
                if runtime.foreign:
                    raise RelayRuntimeError(
                        "stack exhausted: the aot executor ran out of Python stack in a run "
                        "that called a function value from outside the program, so the run "
                        "cannot be repeated as trampolined code; use executor=\"vm\" for "
                        "deep recursion") from None
                self.restarts += 1
        return runtime.drive(self.trampolined[name], values)
