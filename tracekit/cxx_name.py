"""Kernel names, once: the grammar of demangled C++ names, and the spellings of one kernel by different tools.

Demanglers write `[return type] scope::name<template args>(parameters) [qualifiers] [with T1=...]`. Template
arguments and scopes may themselves hold parameter lists, lambdas (EDG's `[lambda(float) (instance 1)]`,
libstdc++'s `{lambda(float)#1}`), `operator ()`, C-style casts `(int)4`, `<unnamed>` and `(anonymous namespace)`.
The name is found by bracket depth, never by the first `<` or `(`: only brackets at depth 0 delimit the parts.

Three forms of a name, each for one question:
- `demangle`: an Itanium-mangled name (`_Z...`) as libstdc++'s `__cxa_demangle` writes it (what CUPTI-based tools,
  PyTorch's profiler, nsys and nvprof show), every other name as it is.
- `normalize_kernel_name`: the function with its template arguments, as one tool spells it (the `KernelKey`'s
  name: `fma_chain<4>` and `fma_chain<1>` stay two kernels).
- `neutral_kernel_name`: the same kernel as any tool spells it. libstdc++ (CUPTI: Kineto, nsys) and NVIDIA's EDG
  demangler (Nsight Compute) differ in lambdas (`{lambda(float)#1}` / `[lambda(float) (instance 1)]`), unnamed
  namespaces, casts in template arguments (`-1` / `(int)-1`, `false` / `0`, `2ul` / `2`), where `const` goes
  (`bool const*` / `const bool *`), the return type EDG writes before a function inside template arguments
  (`void native::gpu_kernel_impl<...>`), the parameters of a lambda's enclosing function (EDG writes them with
  the template's parameter names, `(TensorIteratorBase &, T1)`), and the namespaces ncu leaves out. Scopes and
  the enclosing functions' parameters are dropped, lambdas are `lambda#N` (their order in that function):
  two kernels that then read alike are told apart by the rest of the key (launch configuration, device) and,
  in pairing, by the duration.
"""

from __future__ import annotations

import functools
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
            # close the nearest group this closer matches, dropping the unclosed ones inside it
            del stack[len(stack) - 1 - stack[::-1].index(char) :]
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


def demangle(name: str) -> str:
    """An Itanium-mangled name (`_Z...`) demangled by libstdc++'s __cxa_demangle; any other name as it is,
    and a mangled one as it is where no demangler is available or the name is not valid."""
    if not name.startswith("_Z"):
        return name
    try:
        import cxxfilt

        return str(cxxfilt.demangle(name))
    except Exception:  # cxxfilt.InvalidName, LibraryNotFound (no libstdc++), a malformed name: keep it as written
        return name


# C-style casts Nsight writes inside template arguments: "(int)4", "(unsigned int)8", "(bool)1".
_CAST = re.compile(r"\((?:(?:unsigned|signed|const|long|short)\s+)*[A-Za-z_][\w:]*\s*\**\)")
# Integer literal suffixes: 4u, 8ul, 16LL.
_INT_SUFFIX = re.compile(r"\b(\d+)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)\b")
_RETURN_TYPE = re.compile(r"^(?:void|__global__\s+void)\s+")


def strip_parameters(name: str) -> str:
    """The name without its trailing parameter list: the last parenthesized group outside template brackets."""
    angle = paren = 0
    open_at = None
    for i, char in enumerate(name):
        if char == "<":
            angle += 1
        elif char == ">":
            angle = max(0, angle - 1)
        elif char == "(":
            if angle == 0 and paren == 0:
                open_at = i
            paren += 1
        elif char == ")":
            paren = max(0, paren - 1)
    if open_at is not None and name.rstrip().endswith(")") and open_at > 0:
        return name[:open_at]
    return name


@functools.lru_cache(maxsize=65536)
def normalize_kernel_name(name: str | None) -> str:
    """The function name with template arguments, without return type, parameters, casts and spaces (memoized:
    a store repeats a few names over thousands of launches)."""
    text = _RETURN_TYPE.sub("", (name or "").strip())
    text = strip_parameters(text)
    text = _CAST.sub("", text)
    text = _INT_SUFFIX.sub(r"\1", text)
    text = re.sub(r"\b(?:true)\b", "1", re.sub(r"\b(?:false)\b", "0", text))
    return re.sub(r"\s+", "", text)


# Scopes (namespaces, classes) and the demanglers' spellings of unnamed namespaces, in a normalized name.
_UNNAMED = re.compile(r"(?:<unnamed>|\(anonymousnamespace\)|`anonymousnamespace')::")
_SCOPE = re.compile(r"(?:<unnamed>|\(anonymousnamespace\)|`anonymousnamespace'|[A-Za-z_]\w*)::")
# A lambda as libstdc++ (`{lambda(float)#1}`) and as EDG (`[lambda(float)(instance1)]`) write it, normalized.
_PARAMS = r"(?:\((?:[^(){}\[\]]|\([^()]*\))*\))?"
_LAMBDA = re.compile(rf"\{{lambda{_PARAMS}#(\d+)\}}|\[lambda{_PARAMS}\(instance(\d+)\)\]")
# cv-qualifiers, and the return type EDG writes before a function named inside template arguments.
_CV = re.compile(r"\b(?:const|volatile)\b")
_BUILTIN = r"(?:void|bool|char|short|int|long|float|double|unsigned|signed|wchar_t|char(?:8|16|32)_t)"
_NAMED = r"(?:<unnamed>|\(anonymous namespace\)|[A-Za-z_])[\w:<>]*?[<(]"  # a (scoped) function name, then < or (
_INNER_RETURN_TYPE = re.compile(rf"(?<=[<,])\s*{_BUILTIN}(?:\s+{_BUILTIN})*\s*[*&]*\s+(?={_NAMED})")


def _drop_scope_parameters(text: str) -> str:
    """A normalized name with the parameter lists of the functions its scopes name emptied (`f<float>(A&,T1)::`
    -> `f<float>()::`): a group followed, after cv-qualifiers, by `::`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "(" and not text.endswith("operator", 0, i):
            depth, j = 0, i
            while j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            rest = text[j + 1 :].lstrip("&")
            if j < len(text) and (rest.startswith("::") or re.match(r"(?:const|volatile)+::", rest)):
                out.append("()")  # kept empty: the function stays a function, not a scope to drop
                i = j + 1
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=65536)
def demangler_neutral(name: str) -> str:
    """A normalized name (`normalize_kernel_name`) as any demangler spells it: lambdas as `lambda#N`, without
    scopes and without the parameters of the functions that enclose a lambda."""
    text = _UNNAMED.sub("", _LAMBDA.sub(lambda m: f"lambda#{m.group(1) or m.group(2)}", name))
    return _SCOPE.sub("", _drop_scope_parameters(text))


@functools.lru_cache(maxsize=65536)
def neutral_kernel_name(name: str | None) -> str:
    """A kernel's name as written by any tool (a demangled signature or a bare name) in the one spelling all
    tools share (see the module's docstring): the name `KernelKey.matches` compares across tools."""
    text = _CV.sub("", _INNER_RETURN_TYPE.sub("", name or ""))
    return demangler_neutral(normalize_kernel_name(text))
