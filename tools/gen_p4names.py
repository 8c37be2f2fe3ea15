#!/usr/bin/env python3
"""Write control-plane/ackwise/twins/p4names.py, the Python side of every P4 constant and name, from p4src.

    tools/gen_p4names.py [--check]      (make constants)

Why from the sources: p4c folds `const` values and `#define`s into the code it emits, so the bmv2
JSON holds none of them, and the control plane must not need p4c to know them (``make unit`` runs
without a toolchain). The generated module is committed; control-plane/tests/test_p4names.py
regenerates it in memory and fails while the two differ. Register and counter sizes are not
generated: the control plane reads them from the running program's JSON.

What it reads is what p4src uses, and anything it meets that it cannot read exactly is an error,
not a guess:

- ``#define NAME <integer expression>``. Function-like macros, include guards and macros that are
  not integer expressions (bit slices such as ``223:128``, lists of expressions) are not constants
  and are left out. Code under ``#if``/``#ifdef`` (other than an include guard) is refused: which
  branch p4c takes is not known here (an ``#if`` that holds only an ``#error`` is a check, and fine).
  The exception is ``#ifdef`` (or ``#ifndef``) of a program's own flag (PROGRAM_FLAGS, without
  ``#else``): what it adds for that program (ack_switch's working headers in the shared metadata,
  IPv6 in every program but thinning_floor), or for every program but that one (ack_switch's
  metadata, which the AP proxy does without), is read as taken, that program being one the control
  plane talks to.
- ``typedef bit<N> name_t;`` and ``const TYPE NAME = <integer expression>;`` at the top level.
  Expressions may use integer literals (``0x10``, ``8w3``), other constants, ``( )`` and
  ``~ * + - << >> & ^ |`` with P4's (C's) precedence. A value must fit its ``bit<N>``.
- The consts of one typedef'd type form an enum-like group: an ``IntEnum`` named after the type
  (``keep_reason_t`` -> ``KeepReason``), its members without their common prefix (``KEEP_FLAGS``
  -> ``KeepReason.FLAGS``). Every other constant stays a plain int under its P4 name.
- ``@name(".x.y")`` on a table, action, register or counter: ``TABLE_X_Y = "x.y"`` and so on, the
  name bmv2 (and Thrift) knows the object by. p4src gives every object the control plane uses a
  global name (the leading dot), so that it has one name in every program and control instance
  that includes it; a local ``@name("y")`` on such an object is refused, since bmv2 would qualify
  it with instance names that differ between programs. Objects without ``@name`` are internal.
  Also each register's cell width (Thrift reads at most 63 bits of a cell) and each action's
  parameters (name and width), in order.
- ``@name("field")`` on a table's key field: ``KEY_FIELD = "field"``, what a table entry's key is
  given by.
- ``header name_h { ... }`` for each header type in ``struct headers_t`` (what the programs put on
  the wire): its fields and widths, in order. Headers with a ``varbit`` field are left out.
- ``const entries`` of a table: each entry's key (ternary ``value &&& mask`` as a pair) and its
  action with arguments, in the order the table matches them.

P4 comments on a constant come along as Python comments; the comment before a typedef becomes its
enum's docstring.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
P4SRC = REPO / "p4src"
OUTPUT = REPO / "control-plane" / "ackwise" / "twins" / "p4names.py"
COMMAND = "make constants"
LINE_LENGTH = 110  # ruff's, in pyproject.toml: the generated module is ruff-clean as written

OBJECT_KINDS = ("table", "action", "register", "counter")
# Externs p4src does not use; a @name on one would need a kind of its own here.
UNSUPPORTED_EXTERNS = ("direct_counter", "meter", "direct_meter", "action_profile", "action_selector")


class P4ParseError(ValueError):
    """Something in p4src the generator cannot read exactly; the message says where and what."""


@dataclass
class Const:
    name: str
    expr: str  # as written in P4
    p4_type: str  # "#define", "bit<8>", or a typedef's name
    path: str
    line: int
    comment: str = ""  # the P4 comment after it on its line
    doc: list[str] = field(default_factory=list)  # the P4 comment lines right above it
    value: int | None = None  # resolved by P4Facts.resolve


@dataclass
class Typedef:
    name: str
    width_bits: int
    path: str
    line: int
    doc: list[str] = field(default_factory=list)


@dataclass
class P4Object:
    kind: str  # one of OBJECT_KINDS
    name: str  # the global @name, without its dot
    path: str
    line: int
    params: tuple[tuple[str, str], ...] = ()  # an action's parameters: (name, type as written)
    width_expr: str = ""  # a register's cell width, as written (bit<W>)


@dataclass
class KeyField:
    name: str
    tables: list[str]  # the tables (their @name) with a key field of this name


@dataclass
class Header:
    name: str
    fields: tuple[tuple[str, str], ...]  # (field, its type as written)
    path: str
    line: int


@dataclass
class ConstEntries:
    table: str  # the table's @name, or Control.table for one without
    path: str
    line: int
    # Per entry: the keys (an expression, or a (value, mask) pair of expressions), the action, its
    # arguments.
    entries: list[tuple[tuple[str | tuple[str, str], ...], str, tuple[str, ...]]]


@dataclass(frozen=True)
class TableSpan:
    """Where a table's declaration is in its file's text, and what it is called."""

    start: int
    end: int  # its closing brace
    global_name: str | None  # its @name, without the dot
    local: str
    control: str  # the control it is declared in

    @property
    def name(self) -> str:
        return self.global_name or f"{self.control}.{self.local}"


@dataclass
class Source:
    """One P4 file: its text with comments and preprocessor lines blanked (offsets and line
    numbers kept), and its comments by line."""

    path: str
    code: str
    comments: dict[int, str]  # line number -> the comment's text (without //)
    comment_only: set[int]  # lines that hold nothing but a comment

    def line_of(self, offset: int) -> int:
        return self.code.count("\n", 0, offset) + 1

    def doc_above(self, line: int) -> list[str]:
        """The comment lines right above ``line`` (no blank line between)."""
        doc: list[str] = []
        n = line - 1
        while n in self.comment_only:
            doc.insert(0, self.comments[n])
            n -= 1
        return doc


@dataclass
class P4Facts:
    consts: dict[str, Const] = field(default_factory=dict)
    typedefs: dict[str, Typedef] = field(default_factory=dict)
    objects: dict[str, P4Object] = field(default_factory=dict)
    key_fields: dict[str, KeyField] = field(default_factory=dict)
    headers: dict[str, Header] = field(default_factory=dict)
    const_entries: list[ConstEntries] = field(default_factory=list)
    wire_headers: list[str] = field(default_factory=list)  # the header types in headers_t

    def add_const(self, const: Const) -> None:
        known = self.consts.get(const.name)
        if known is not None and (known.expr, known.p4_type) != (const.expr, const.p4_type):
            raise P4ParseError(
                f"{const.path}:{const.line}: {const.name} is also defined in {known.path}:{known.line} "
                f"as {known.expr!r}: one Python module cannot hold both"
            )
        if known is None:
            self.consts[const.name] = const

    def add_object(self, obj: P4Object) -> None:
        known = self.objects.get(obj.name)
        if known is not None and (known.kind, known.params, known.width_expr) != (
            obj.kind,
            obj.params,
            obj.width_expr,
        ):
            raise P4ParseError(
                f"{obj.path}:{obj.line}: @name(.{obj.name}) is also a different {known.kind} in "
                f"{known.path}:{known.line}"
            )
        if known is None:
            self.objects[obj.name] = obj

    # ---- values ----

    def resolve(self) -> None:
        for const in self.consts.values():
            self.value_of(const.name, ())

    def value_of(self, name: str, stack: tuple[str, ...]) -> int:
        const = self.consts.get(name)
        if const is None:
            raise P4ParseError(f"{' -> '.join(stack) or 'an expression'} uses {name}, not a known constant")
        if const.value is not None:
            return const.value
        if name in stack:
            raise P4ParseError(f"{const.path}:{const.line}: {name} is defined in terms of itself")
        value = self.evaluate(const.expr, (*stack, name), f"{const.path}:{const.line}: {name}")
        width = self.width_of(const.p4_type, f"{const.path}:{const.line}: {name}")
        if width is not None:
            if value < 0:
                value &= (1 << width) - 1  # ~x in bit<N>
            if value >= 1 << width:
                raise P4ParseError(
                    f"{const.path}:{const.line}: {name} = {value} does not fit its {const.p4_type} "
                    f"({width} bits)"
                )
        elif value < 0:
            raise P4ParseError(f"{const.path}:{const.line}: {name} = {value}: negative")
        const.value = value
        return value

    def width_of(self, p4_type: str, where: str) -> int | None:
        """Bits of a const's type; None for a #define (no type)."""
        if p4_type == "#define":
            return None
        bits = re.fullmatch(r"bit<(.+)>", p4_type)
        if bits:
            return self.evaluate(bits.group(1), (), where)
        if p4_type in self.typedefs:
            return self.typedefs[p4_type].width_bits
        raise P4ParseError(f"{where}: type {p4_type} is not bit<N> or a typedef of one")

    def evaluate(self, expr: str, stack: tuple[str, ...], where: str) -> int:
        """An integer expression of literals and constants, by P4's (C's) rules for the operators
        p4src uses, which Python's precedence shares."""
        python = []
        for kind, text in tokens(expr, where):
            if kind == "number":
                python.append(str(number(text)))
            elif kind == "name":
                python.append(str(self.value_of(text, stack)))
            else:
                python.append(text)
        try:
            tree = ast.parse(" ".join(python), mode="eval")
        except SyntaxError:
            raise P4ParseError(f"{where}: {expr!r} is not an integer expression") from None
        return _fold(tree.body, where, expr)


_TOKEN = re.compile(
    r"\s*(?:(?P<number>\d+[ws](?:0[xX][0-9a-fA-F_]+|\d+)|0[xX][0-9a-fA-F_]+|\d+)"
    r"|(?P<name>[A-Za-z_]\w*)|(?P<op><<|>>|[-+*~&|^()]))"
)


def tokens(expr: str, where: str) -> list[tuple[str, str]]:
    out, pos, text = [], 0, expr.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise P4ParseError(f"{where}: {expr!r} is not an integer expression (at {text[pos:]!r})")
        kind = m.lastgroup
        assert kind is not None
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def is_integer_expression(expr: str) -> bool:
    try:
        tokens(expr, "")
    except P4ParseError:
        return False
    return bool(expr.strip())


def number(text: str) -> int:
    """A P4 integer literal: 10, 0x0A, 8w10 (width-prefixed: the width is the const's business)."""
    body = re.sub(r"^\d+[ws]", "", text).replace("_", "")
    return int(body, 0)


_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitXor: lambda a, b: a ^ b,
}
_UNARY = {ast.Invert: lambda a: ~a, ast.USub: lambda a: -a, ast.UAdd: lambda a: a}


def _fold(node: ast.expr, where: str, expr: str) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_fold(node.left, where, expr), _fold(node.right, where, expr))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_fold(node.operand, where, expr))
    raise P4ParseError(f"{where}: {expr!r} is not an integer expression")


# ---- reading the sources ----


def read_source(path: str, text: str) -> Source:
    """Blank the comments out of ``text`` (keeping them by line) and keep everything else where it
    was, so that offsets and line numbers still point into the file."""
    code = []
    comments: dict[int, str] = {}
    comment_only: set[int] = set()
    for number_, line in enumerate(text.split("\n"), start=1):
        cut = _comment_start(line, f"{path}:{number_}")
        if cut is None:
            code.append(line)
            continue
        comments[number_] = line[cut + 2 :].strip()
        if not line[:cut].strip():
            comment_only.add(number_)
        code.append(line[:cut] + " " * (len(line) - cut))
    return Source(path, "\n".join(code), comments, comment_only)


def _comment_start(line: str, where: str) -> int | None:
    """Where a // comment starts, outside string literals; None if none. (p4src has no /* */.)"""
    in_string = False
    for i, ch in enumerate(line):
        if ch == '"':
            in_string = not in_string
        elif not in_string and line.startswith("//", i):
            return i
        elif not in_string and line.startswith("/*", i):
            raise P4ParseError(f"{where}: /* */ comments are not read; use //")
    return None


# Macros a program defines before its includes, so that a shared file adds what only that program
# uses (headers.p4: ack_switch's working headers, the AP proxy's flow key; IPv6, in every program
# but the yardstick thinning_floor; checksums.p4: the TCP checksum over IPv6's pseudo-header, in
# programs that rewrite TCP over IPv6; `#ifndef ACKWISE_AP_PROXY`: what every program but the AP
# proxy has); code under `#ifdef` or `#ifndef` of one is read as taken.
PROGRAM_FLAGS = ("ACKWISE_ACK_SWITCH", "ACKWISE_AP_PROXY", "ACKWISE_IPV6", "ACKWISE_IPV6_TCP_REWRITE")


def parse_preprocessor(source: Source, facts: P4Facts) -> str:
    """Read the #defines; return the code with every preprocessor line (and its continuations)
    blanked."""
    lines = source.code.split("\n")
    conditionals: list[str] = []  # "guard" or "if", innermost last
    n = 0
    while n < len(lines):
        start = n
        directive = lines[n].strip()
        if not directive.startswith("#"):
            if directive and "if" in conditionals:
                raise P4ParseError(
                    f"{source.path}:{n + 1}: code under #if/#ifdef: which branch p4c takes is not known here"
                )
            n += 1
            continue
        while lines[n].rstrip().endswith("\\") and n + 1 < len(lines):
            n += 1
        text = " ".join(lines[i].rstrip().rstrip("\\") for i in range(start, n + 1)).strip()
        for i in range(start, n + 1):
            lines[i] = " " * len(lines[i])
        n += 1
        where = f"{source.path}:{start + 1}"
        word = re.match(r"#\s*(\w+)", text)
        keyword = word.group(1) if word else ""
        if keyword == "ifndef":
            # An include guard: #ifndef X directly followed by #define X (with nothing after X).
            guard = text.split()[1] if len(text.split()) > 1 else ""
            following = lines[n].strip() if n < len(lines) else ""
            is_guard = re.fullmatch(rf"#\s*define\s+{re.escape(guard)}", following) is not None
            conditionals.append("guard" if is_guard else "program" if guard in PROGRAM_FLAGS else "if")
        elif keyword == "ifdef" and len(text.split()) == 2 and text.split()[1] in PROGRAM_FLAGS:
            conditionals.append("program")
        elif keyword in ("if", "ifdef"):
            conditionals.append("if")
        elif keyword in ("elif", "else"):
            if not conditionals:
                raise P4ParseError(f"{where}: #{keyword} without #if")
            if conditionals[-1] == "program":
                raise P4ParseError(f"{where}: #{keyword} under a program's #ifdef: write it without")
        elif keyword == "endif":
            if not conditionals:
                raise P4ParseError(f"{where}: #endif without #if")
            conditionals.pop()
        elif keyword == "define":
            m = re.match(r"#\s*define\s+(\w+)(\(?)(.*)$", text)
            if m is None:
                raise P4ParseError(f"{where}: cannot read {text!r}")
            name, paren, body = m.group(1), m.group(2), m.group(3).strip()
            if paren:  # function-like: not a constant
                continue
            if "if" in conditionals:
                raise P4ParseError(
                    f"{where}: #define under #if/#ifdef: which branch p4c takes is not known here"
                )
            if not body:  # an include guard, or a flag without a value
                continue
            if not is_integer_expression(body):
                continue  # a bit slice (223:128), a list of expressions ...: not a constant
            line = start + 1
            facts.add_const(
                Const(
                    name,
                    body,
                    "#define",
                    source.path,
                    line,
                    source.comments.get(line, ""),
                    source.doc_above(line),
                )
            )
        elif keyword in ("include", "error"):
            continue  # nothing defined (an #error under #if is a check at compile time)
        else:
            raise P4ParseError(f"{where}: preprocessor line {text!r} is not one the generator reads")
    return "\n".join(lines)


def depths(code: str) -> list[int]:
    """The brace depth at every offset."""
    out, depth = [], 0
    for ch in code:
        if ch == "{":
            depth += 1
        out.append(depth)
        if ch == "}":
            depth -= 1
    return out


def matching_brace(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    raise P4ParseError(f"unbalanced braces from offset {open_at}")


_TYPEDEF = re.compile(r"\btypedef\s+bit\s*<\s*(\d+)\s*>\s+(\w+)\s*;")
_CONST = re.compile(r"\bconst\s+(bit\s*<[^>]+>|\w+)\s+(\w+)\s*=\s*([^;]+);")
_HEADER = re.compile(r"\bheader\s+(\w+)\s*\{")
_STRUCT = re.compile(r"\bstruct\s+(\w+)\s*\{")
_NAME = re.compile(r'@name\(\s*"([^"]*)"\s*\)')
_ANNOTATION = re.compile(r"\s*@\w+(\([^)]*\))?")
_TABLE = re.compile(r"\btable\s+(\w+)\s*\{")
_CONTROL = re.compile(r"\bcontrol\s+(\w+)\s*\(")


def parse_source(source: Source, facts: P4Facts) -> None:
    code = parse_preprocessor(source, facts)
    depth = depths(code)

    for m in _TYPEDEF.finditer(code):
        if depth[m.start()] == 0:
            line = source.line_of(m.start())
            typedef = Typedef(m.group(2), int(m.group(1)), source.path, line, source.doc_above(line))
            known = facts.typedefs.get(typedef.name)
            if known is not None and known.width_bits != typedef.width_bits:
                raise P4ParseError(f"{source.path}:{line}: typedef {typedef.name} differs from {known.path}")
            facts.typedefs.setdefault(typedef.name, typedef)

    for m in _CONST.finditer(code):
        if depth[m.start()] != 0:
            continue  # a control's or a table's own (local constants, const entries ...)
        line = source.line_of(m.start())
        p4_type = re.sub(r"\s+", "", m.group(1))
        facts.add_const(
            Const(
                m.group(2),
                " ".join(m.group(3).split()),
                p4_type,
                source.path,
                line,
                source.comments.get(line, ""),
                source.doc_above(line),
            )
        )

    for m in _HEADER.finditer(code):
        if depth[m.start()] != 0:
            continue
        body = code[m.end() : matching_brace(code, m.end() - 1)]
        fields: list[tuple[str, str]] = []
        for decl in (d.strip() for d in body.split(";") if d.strip()):
            parts = decl.rsplit(None, 1)
            if len(parts) != 2:
                raise P4ParseError(f"{source.path}:{source.line_of(m.start())}: field {decl!r}")
            fields.append((parts[1], re.sub(r"\s+", "", parts[0])))
        facts.headers[m.group(1)] = Header(m.group(1), tuple(fields), source.path, source.line_of(m.start()))

    for m in _STRUCT.finditer(code):
        if m.group(1) == "headers_t" and depth[m.start()] == 0:
            body = code[m.end() : matching_brace(code, m.end() - 1)]
            for decl in (d.strip() for d in body.split(";") if d.strip()):
                p4_type = decl.split()[0]
                if p4_type not in facts.wire_headers:
                    facts.wire_headers.append(p4_type)

    tables = [
        TableSpan(
            m.start(),
            matching_brace(code, m.end() - 1),
            _global_name_before(code, m.start()),
            m.group(1),
            _control_at(code, m.start()),
        )
        for m in _TABLE.finditer(code)
    ]

    for m in _NAME.finditer(code):
        _read_name(source, code, m, tables, facts)

    for table in tables:
        entries = re.search(r"\bconst\s+entries\s*=\s*\{", code[table.start : table.end])
        if entries is None:
            continue
        open_at = table.start + entries.end() - 1
        body = code[open_at + 1 : matching_brace(code, open_at)]
        facts.const_entries.append(
            ConstEntries(
                table.name,
                source.path,
                source.line_of(open_at),
                [_const_entry(e.strip(), source.path) for e in body.split(";") if e.strip()],
            )
        )


def _field_width(p4_type: str, facts: P4Facts, where: str) -> int:
    if p4_type == "bool":
        return 1
    bits = re.fullmatch(r"bit<(.+)>", p4_type)
    if bits:
        return facts.evaluate(bits.group(1), (), where)
    if p4_type in facts.typedefs:
        return facts.typedefs[p4_type].width_bits
    raise P4ParseError(f"{where}: field type {p4_type} is not bit<N>, bool or a typedef of bit<N>")


def _global_name_before(code: str, at: int) -> str | None:
    """The @name(".x") annotating the declaration that starts at ``at``, if any."""
    before = code[:at].rstrip()
    m = re.search(r'@name\(\s*"\.([^"]*)"\s*\)$', before)
    return m.group(1) if m else None


def _control_at(code: str, at: int) -> str:
    controls = list(_CONTROL.finditer(code, 0, at))
    return controls[-1].group(1) if controls else ""


def _read_name(
    source: Source,
    code: str,
    m: re.Match[str],
    tables: list[TableSpan],
    facts: P4Facts,
) -> None:
    name, line = m.group(1), source.line_of(m.start())
    where = f"{source.path}:{line}"
    rest = code[m.end() :]
    skipped = _ANNOTATION.match(rest)
    while skipped and skipped.group(0).strip():
        rest = rest[skipped.end() :]
        skipped = _ANNOTATION.match(rest)
    rest = rest.lstrip()
    kind = None
    params: tuple[tuple[str, str], ...] = ()
    width_expr = ""
    if re.match(r"table\b", rest):
        kind = "table"
    elif re.match(r"action\b", rest):
        kind = "action"
        signature = re.match(r"action\s+\w+\s*\(([^)]*)\)", rest)
        if signature is None:
            raise P4ParseError(f"{where}: cannot read the action after @name({name!r})")
        params = tuple(_action_param(p, where) for p in signature.group(1).split(",") if p.strip())
    elif re.match(r"register\s*<", rest):
        kind = "register"
        cell = re.match(r"register\s*<\s*(bit\s*<[^>]+>|\w+)\s*>", rest)
        if cell is None:
            raise P4ParseError(f"{where}: cannot read the register after @name({name!r})")
        width_expr = re.sub(r"\s+", "", cell.group(1))
    elif re.match(r"counter\s*\(", rest):
        kind = "counter"
    elif re.match(rf"({'|'.join(UNSUPPORTED_EXTERNS)})\b", rest):
        raise P4ParseError(f"{where}: @name({name!r}) on an extern the generator does not know: add its kind")
    elif re.search(r":\s*(exact|ternary|lpm|range|optional)\s*$", code[: m.start()]):
        if name.startswith("."):
            raise P4ParseError(f"{where}: a key field's @name is local: {name!r}")
        table = next((t for t in tables if t.start <= m.start() <= t.end), None)
        if table is None:
            raise P4ParseError(f"{where}: key field @name({name!r}) outside a table")
        key = facts.key_fields.setdefault(name, KeyField(name, []))
        if table.name not in key.tables:
            key.tables.append(table.name)
        return
    if kind is None:
        raise P4ParseError(f"{where}: @name({name!r}) on something the generator does not read")
    if not name.startswith("."):
        raise P4ParseError(
            f"{where}: {kind} @name({name!r}) is local: bmv2 would qualify it with control instance "
            f'names that differ between programs; give it a global name, @name(".{name}")'
        )
    facts.add_object(P4Object(kind, name[1:], source.path, line, params, width_expr))


def _action_param(text: str, where: str) -> tuple[str, str]:
    """``bit<16> mss`` -> (mss, bit<16>); a direction (in, out, inout) is left out."""
    m = re.fullmatch(r"\s*(?:(?:in|out|inout)\s+)?(.+?)\s+(\w+)\s*", text)
    if m is None:
        raise P4ParseError(f"{where}: action parameter {text!r}")
    return m.group(2), re.sub(r"\s+", "", m.group(1))


def _const_entry(text: str, path: str) -> tuple[tuple[str | tuple[str, str], ...], str, tuple[str, ...]]:
    m = re.fullmatch(r"(.+?)\s*:\s*(\w+)\s*\((.*)\)", text, re.DOTALL)
    if m is None:
        raise P4ParseError(f"{path}: const entry {text!r} is not `key : action(args)`")
    keys_text = m.group(1).strip()
    if keys_text.startswith("(") and keys_text.endswith(")"):
        keys_text = keys_text[1:-1]
    keys: list[str | tuple[str, str]] = []
    for key in keys_text.split(","):
        if "&&&" in key:
            value, mask = key.split("&&&")
            keys.append((" ".join(value.split()), " ".join(mask.split())))
        else:
            keys.append(" ".join(key.split()))
    args = tuple(" ".join(a.split()) for a in m.group(3).split(",") if a.strip())
    return tuple(keys), m.group(2), args


def parse_p4(sources: dict[str, str]) -> P4Facts:
    """Everything the generated module holds, from P4 files by path (relative to the repository)."""
    facts = P4Facts()
    for path in sorted(sources):
        parse_source(read_source(path, sources[path]), facts)
    facts.resolve()
    for obj in facts.objects.values():
        if obj.kind == "register":
            facts.width_of(obj.width_expr, f"{obj.path}:{obj.line}: register {obj.name}")
    return facts


def read_p4src(root: Path = P4SRC) -> dict[str, str]:
    files = sorted(root.glob("*.p4")) + sorted(root.glob("include/*.p4"))
    return {str(p.relative_to(root.parent)): p.read_text(encoding="utf-8") for p in files}


# ---- writing the module ----


def class_name(typedef: str) -> str:
    """keep_reason_t -> KeepReason."""
    base = typedef[:-2] if typedef.endswith("_t") else typedef
    return "".join(part.capitalize() for part in base.split("_"))


def member_prefix(names: list[str]) -> str:
    """The prefix the members of an enum-like group share, up to an underscore (KEEP_ of KEEP_*),
    such that every member keeps a name that is a Python identifier."""
    prefix = names[0] if len(names) == 1 else _common_prefix(names)
    prefix = prefix[: prefix.rfind("_") + 1]
    while prefix and any(not n[len(prefix) :] or n[len(prefix)].isdigit() for n in names):
        prefix = prefix[: prefix[:-1].rfind("_") + 1]
    return prefix


def _common_prefix(names: list[str]) -> str:
    first, last = min(names), max(names)
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]


def object_constant(kind: str, name: str) -> str:
    """table ack_thinning.flow_policy -> TABLE_ACK_THINNING_FLOW_POLICY."""
    return f"{kind.upper()}_{name.replace('.', '_').upper()}"


def _literal(const: Const) -> str:
    """The value as Python source: hex where P4 wrote a hex literal (with as many digits)."""
    assert const.value is not None
    hexa = re.fullmatch(r"(?:\d+[ws])?0[xX]([0-9a-fA-F_]+)", const.expr)
    if hexa:
        return f"0x{const.value:0{len(hexa.group(1).replace('_', ''))}X}"
    return str(const.value)


def _is_plain_literal(expr: str) -> bool:
    return re.fullmatch(r"(?:\d+[ws])?(?:0[xX][0-9a-fA-F_]+|\d+)", expr) is not None


def _is_section_rule(comment: str) -> bool:
    """A P4 section heading such as ``---- Widths ----``."""
    return re.fullmatch(r"-{2,}.*-{2,}", comment) is not None


def _comment_lines(text: str, indent: str) -> list[str]:
    """``text`` as # comment lines that fit the line length (an empty one as a bare #)."""
    if not text:
        return [f"{indent}#"]
    return [f"{indent}# {chunk}" for chunk in textwrap.wrap(text, LINE_LENGTH - len(indent) - 2)]


def _assignment(indent: str, target: str, value: str, comment: str) -> list[str]:
    """``target = value  # comment``, the comment above it when the line would be too long."""
    line = f"{indent}{target} = {value}"
    if not comment:
        return [line]
    if len(line) + 4 + len(comment) <= LINE_LENGTH:
        return [f"{line}  # {comment}"]
    return [*_comment_lines(comment, indent), line]


def _const_lines(const: Const, target: str, indent: str) -> list[str]:
    """A constant with the P4 comments above and after it; an expression's P4 form in the comment."""
    lines = [line for doc in const.doc for line in _comment_lines(doc, indent)]
    comment = const.comment
    if not _is_plain_literal(const.expr):
        comment = f"= {const.expr}" + (f"; {comment}" if comment else "")
    return lines + _assignment(indent, target, _literal(const), comment)


def _docstring(summary: str, source: str, indent: str) -> list[str]:
    """A class docstring: the P4 comment (wrapped), then where the group comes from."""
    if not summary:
        return [f'{indent}"""{source}"""']
    wrapped = textwrap.wrap(summary, LINE_LENGTH - len(indent) - 3)
    return [
        f'{indent}"""{wrapped[0]}',
        *(indent + w for w in wrapped[1:]),
        "",
        f"{indent}{source}",
        f'{indent}"""',
    ]


def _enum_lines(typedef: Typedef, consts: list[Const]) -> list[str]:
    prefix = member_prefix([c.name for c in consts])
    # A section heading right above the typedef (---- Why ... ----) is its summary too.
    summary = " ".join(d.strip("- ") if _is_section_rule(d) else d for d in typedef.doc if d)
    if summary and not summary.endswith("."):
        summary += "."
    source = f"P4: {typedef.name}, {prefix}* in {typedef.path}."
    lines = [f"class {class_name(typedef.name)}(IntEnum):", *_docstring(summary, source, "    "), ""]
    for const in consts:
        lines += _const_lines(const, const.name[len(prefix) :], "    ")
    return lines


def _python_expr(expr: str, facts: P4Facts, members: dict[str, str]) -> str:
    """A const entry's key or argument as Python: an enum member or a constant by name where the
    P4 names one, else its value."""
    if expr in members:
        return members[expr]
    if expr in facts.consts:
        return expr
    return str(facts.evaluate(expr, (), f"const entry {expr!r}"))


def _tuple(items: list[str]) -> str:
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _dict_item(key: str, items: list[str]) -> list[str]:
    """``key: (items),`` in a dict, split as ruff format splits it when too long."""
    line = f"    {key}: {_tuple(items)},"
    if len(line) <= LINE_LENGTH:
        return [line]
    return [f"    {key}: (", *[f"        {item}," for item in items], "    ),"]


def _constants(facts: P4Facts, groups: dict[str, list[Const]]) -> list[str]:
    """Per P4 file, in file order: its plain constants and its enum-like groups, with their comments."""
    items: dict[str, list[tuple[int, Const | Typedef]]] = {}
    for const in facts.consts.values():
        if const.p4_type not in groups:
            items.setdefault(const.path, []).append((const.line, const))
    for typedef in groups:
        td = facts.typedefs[typedef]
        items.setdefault(td.path, []).append((td.line, td))
    out: list[str] = []
    for path in sorted(items):
        out += ["", "", f"# ---- {path} ----"]
        previous = ""  # "", "const" or "class": what came before in this section
        for _, item in sorted(items[path], key=lambda x: x[0]):
            if isinstance(item, Typedef):
                out += ["", ""] if previous else []
                out += _enum_lines(item, groups[item.name])
                previous = "class"
            else:
                if previous == "class":
                    out += ["", ""]
                elif previous and item.doc:
                    out += [""]  # a constant with its own comment stands apart
                out += _const_lines(item, item.name, "")
                previous = "const"
    return out


def _objects(facts: P4Facts) -> list[str]:
    out: list[str] = []
    for kind in OBJECT_KINDS:
        objects = sorted((o for o in facts.objects.values() if o.kind == kind), key=lambda o: o.name)
        out += ["", "", f"# ---- {kind}s, by @name ----"]
        out += [f'{object_constant(kind, o.name)} = "{o.name}"' for o in objects]
    out += ["", "", "# ---- table key fields, by @name (a table entry's key is given by these) ----"]
    for key in sorted(facts.key_fields.values(), key=lambda k: k.name):
        out += _assignment("", f"KEY_{key.name.upper()}", f'"{key.name}"', ", ".join(sorted(key.tables)))

    out += [
        "",
        "# Bits of a register's cell (Thrift reads a cell as a signed 64-bit value: at most 63 of them).",
        "REGISTER_WIDTHS_BITS: dict[str, int] = {",
    ]
    for r in sorted((o for o in facts.objects.values() if o.kind == "register"), key=lambda o: o.name):
        out += [f"    {object_constant('register', r.name)}: {facts.width_of(r.width_expr, r.name)},"]
    out += [
        "}",
        "",
        "# Each action's parameters, in order: (name, bits).",
        "ACTION_PARAMS_BITS: dict[str, tuple[tuple[str, int], ...]] = {",
    ]
    for a in sorted((o for o in facts.objects.values() if o.kind == "action"), key=lambda o: o.name):
        where = f"{a.path}:{a.line}: action {a.name}"
        params = [f'("{name}", {_field_width(p4_type, facts, where)})' for name, p4_type in a.params]
        out += _dict_item(object_constant("action", a.name), params)
    out += ["}"]
    return out


def _headers(facts: P4Facts) -> list[str]:
    out = [
        "",
        "# The fixed-width headers of headers_t (what the programs put on the wire): (field, bits),",
        "# in order.",
        "HEADER_FIELDS_BITS: dict[str, tuple[tuple[str, int], ...]] = {",
    ]
    for name in facts.wire_headers:
        header = facts.headers.get(name)
        if header is None or any(p4_type.startswith("varbit<") for _, p4_type in header.fields):
            continue  # a header union or stack, or one of variable length
        fields = [
            f'("{f}", {_field_width(p4_type, facts, f"{header.path}: header {name}")})'
            for f, p4_type in header.fields
        ]
        out += _dict_item(f'"{name}"', fields)
    return [*out, "}"]


def _const_entries(facts: P4Facts, members: dict[str, str]) -> list[str]:
    out: list[str] = []
    for table in facts.const_entries:
        snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", table.table.replace(".", "_"))
        out += [
            "",
            f"# The const entries of {table.table} ({table.path}), in the order it matches them:",
            "# (keys, a ternary key as (value, mask); the action; its arguments).",
            f"{snake.upper()}_ENTRIES = (",
        ]
        for keys, action, args in table.entries:
            key_items = [
                f"({_python_expr(k[0], facts, members)}, {_python_expr(k[1], facts, members)})"
                if isinstance(k, tuple)
                else _python_expr(k, facts, members)
                for k in keys
            ]
            arg_items = [_python_expr(a, facts, members) for a in args]
            line = f'    ({_tuple(key_items)}, "{action}", {_tuple(arg_items)}),'
            if len(line) > LINE_LENGTH:
                raise P4ParseError(f"{table.path}: a const entry of {table.table} is too long for one line")
            out.append(line)
        out.append(")")
    return out


def generate(sources: dict[str, str]) -> str:
    """The text of control-plane/ackwise/twins/p4names.py for these P4 sources (path -> text)."""
    facts = parse_p4(sources)
    groups: dict[str, list[Const]] = {}
    for const in facts.consts.values():
        if const.p4_type in facts.typedefs:
            groups.setdefault(const.p4_type, []).append(const)
    members: dict[str, str] = {}  # P4 name -> Python name, of every enum member
    for typedef, consts in groups.items():
        values = [c.value for c in consts]
        if len(set(values)) != len(values):
            raise P4ParseError(f"{typedef}: two of {', '.join(c.name for c in consts)} have one value")
        prefix = member_prefix([c.name for c in consts])
        members |= {c.name: f"{class_name(typedef)}.{c.name[len(prefix) :]}" for c in consts}
    header = [
        f'"""Every P4 constant and name the control plane shares with p4src, generated by `{COMMAND}`',
        "(tools/gen_p4names.py) from the P4 sources. Do not edit: change the P4 and run the command;",
        "control-plane/tests/test_p4names.py fails while this file differs from what p4src gives.",
        "",
        "Constants keep their P4 names; the consts of one typedef'd type are an IntEnum named after it",
        "(keep_reason_t: KeepReason); objects are named by their @name (TABLE_, ACTION_, REGISTER_,",
        "COUNTER_, and KEY_ for a table's key fields). Register and counter sizes are not here: the",
        "control plane reads them from the running program (SwitchClient.program).",
        '"""',
        "",
        "from enum import IntEnum",
    ]
    lines = (
        header
        + _constants(facts, groups)
        + _objects(facts)
        + _headers(facts)
        + _const_entries(facts, members)
    )
    # One blank line after the import, as ruff's isort wants before a comment.
    del lines[len(header)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 (with a diff) if the module is stale"
    )
    args = parser.parse_args(argv)
    try:
        text = generate(read_p4src())
    except P4ParseError as exc:
        print(f"gen_p4names: {exc}", file=sys.stderr)
        return 2
    target = OUTPUT.relative_to(REPO)
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
    if current == text:
        print(f"{target}: up to date")
        return 0
    if args.check:
        sys.stdout.writelines(
            difflib.unified_diff(current.splitlines(True), text.splitlines(True), str(target), "p4src")
        )
        return 1
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"{target}: written from p4src")
    return 0


if __name__ == "__main__":
    sys.exit(main())
