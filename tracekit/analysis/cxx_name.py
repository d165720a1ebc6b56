"""The function name inside a demangled C++ signature, read from the grammar of demangled names.

Demanglers write `[return type] scope::name<template args>(parameters) [qualifiers] [with T1=...]`. Template
arguments and scopes may themselves hold parameter lists, lambdas (EDG's `[lambda(float) (instance 1)]`,
libstdc++'s `{lambda(float)#1}`), `operator ()`, C-style casts `(int)4`, `<unnamed>` and `(anonymous namespace)`.
The name is found by bracket depth, never by the first `<` or `(`: only brackets at depth 0 delimit the parts.
"""

from __future__ import annotations

import re

_CLOSE = {"(": ")", "<": ">", "[": "]", "{": "}"}
# Spellings whose brackets are not brackets: unnamed scopes, `->`, and operator names (`operator()`,
# `operator<<`, `operator->`). They are skipped whole at any depth so they cannot unbalance it.
_ATOM = re.compile(
    r"<unnamed>|\(anonymous namespace\)|`anonymous namespace'|->"
    r"|\boperator\b\s*(?:\(\s*\)|\[\s*\]|<=>|<<=?|>>=?|->\*?|[-+*/%^&|~!=<>,]{1,2}=?)?"
)
# What may follow a function's parameter list: cv/ref qualifiers and noexcept.
_TRAILING_QUALIFIERS = re.compile(r"(?:\s|\bconst\b|\bvolatile\b|\bnoexcept\b|&)+$")
_PREFIX_WORDS = re.compile(r"^(?:__global__|__device__|static|extern|inline)\s+")


def _pieces(text: str) -> list[tuple[str, str]]:
    """`text` split at depth 0 into ("text", run) and (opening bracket, whole group) pieces. A closer that does
    not close the innermost group closes the nearest group it matches (a `<` that was a less-than is dropped);
    a group left open at the end (a truncated name) is a piece of its own."""
    pieces: list[tuple[str, str]] = []
    stack: list[str] = []
    start = i = 0
    while i < len(text):
        atom = _ATOM.match(text, i)
        if atom and atom.end() > i:
            i = atom.end()
            continue
        char = text[i]
        if char in _CLOSE:
            if not stack:
                if i > start:
                    pieces.append(("text", text[start:i]))
                start = i
            stack.append(_CLOSE[char])
        elif stack and char in stack:
            while stack.pop() != char:
                pass
            if not stack:
                pieces.append((text[start], text[start : i + 1]))
                start = i + 1
        i += 1
    if start < len(text):
        pieces.append((text[start] if stack else "text", text[start:]))
    return pieces


def _drop_trailing_decorations(pieces: list[tuple[str, str]]) -> None:
    """Remove qualifiers, `[with T1=...]` clauses and `[abi:...]` tags from the end, in place."""
    while pieces:
        kind, run = pieces[-1]
        if kind == "text":
            kept = _TRAILING_QUALIFIERS.sub("", run)
            if kept == run:
                return
            if kept:
                pieces[-1] = ("text", kept)
            else:
                pieces.pop()
        elif kind == "[" and re.match(r"\[\s*(?:with\b|abi:)", run):
            pieces.pop()
        else:
            return


def function_name(signature: str | None) -> str:
    """The unqualified function name without template arguments or parameters (Nsight's base name):
    `distribution_elementwise_grid_stride_kernel` for
    `void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float, (int)4, ...[lambda(...)
    (instance 1)]...>(at::TensorIteratorBase &, T3, T4)`. Empty when the text holds no name."""
    text = _PREFIX_WORDS.sub("", (signature or "").strip())
    pieces = _pieces(text)
    _drop_trailing_decorations(pieces)
    # The parameter list, when something precedes it; then the template arguments.
    if len(pieces) > 1 and pieces[-1][0] == "(":
        pieces.pop()
        _drop_trailing_decorations(pieces)
    if len(pieces) > 1 and pieces[-1][0] == "<":
        pieces.pop()
        _drop_trailing_decorations(pieces)
    if not pieces:
        return ""
    kind, run = pieces[-1]
    if kind != "text":  # a lambda or another group names the function
        return run.strip()
    last = run.rsplit("::", 1)[-1]
    operator = re.search(r"\boperator\b.*$", last)
    if operator:
        return operator.group(0).strip()
    words = last.split()
    return words[-1] if words else ""
