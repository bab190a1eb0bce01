"""POSIX shell arithmetic, `$((…))`, over integers: what a container script computes a flag's value with
(`--data-parallel-size $((LWS_GROUP_SIZE * DP_SIZE_LOCAL))`). Pure; bounded (200 characters, 63-bit values)."""

from __future__ import annotations

import re


_ARITH_TOKEN = re.compile(r"\s*(?:([0-9]{1,18})|\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?|([-+*/%()]))")


def arithmetic(expr: str, value) -> int | str:
    """POSIX shell arithmetic over integers (+ - * / % and parentheses; / truncates toward zero as in C), with
    `value(name)` giving a variable's integer or why it is unknown. The result, or why there is none."""
    if len(expr) > 200:
        return "an arithmetic expression over 200 characters"
    tokens: list = []
    pos = 0
    while pos < len(expr.rstrip()):
        m = _ARITH_TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            return f"$(({expr})): arithmetic kvcalc does not evaluate"
        pos = m.end()
        if m.group(1):
            tokens.append(int(m.group(1)))
        elif m.group(2):
            v = value(m.group(2))
            if isinstance(v, str):
                return v
            tokens.append(v)
        else:
            tokens.append(m.group(3))
    try:
        result, rest = _sum(tokens)
    except (IndexError, ValueError, ZeroDivisionError):
        return f"$(({expr})): arithmetic kvcalc does not evaluate"
    return result if not rest else f"$(({expr})): arithmetic kvcalc does not evaluate"


def _sum(t: list):
    left, t = _product(t)
    while t and t[0] in ("+", "-"):
        op, (right, t) = t[0], _product(t[1:])
        left = left + right if op == "+" else left - right
    return left, t


def _product(t: list):
    left, t = _unary(t)
    while t and t[0] in ("*", "/", "%"):
        op, (right, t) = t[0], _unary(t[1:])
        if op == "*":
            left *= right
        else:
            q = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)  # C division
            left = q if op == "/" else left - q * right
        if abs(left) >= 1 << 63:
            raise ValueError("overflow")
    return left, t


def _unary(t: list):
    if t[0] in ("-", "+"):
        v, rest = _unary(t[1:])
        return (-v if t[0] == "-" else v), rest
    if t[0] == "(":
        v, rest = _sum(t[1:])
        if not rest or rest[0] != ")":
            raise ValueError("unbalanced")
        return v, rest[1:]
    if isinstance(t[0], int):
        return t[0], t[1:]
    raise ValueError(t[0])
