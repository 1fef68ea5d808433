"""What a PromQL expression refers to: the metric names it selects, each selector's label matchers, and the labels of
its grouping clauses (by, without, on, ignoring, group_left, group_right). A small lexer, enough to check names against
an exposition; whether the expression parses is promtool's to say. Grafana variables ($name, ${name}) may stand in
strings and range brackets."""

import re

TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<str>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`)
  | (?P<num>0x[0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?(?:\d+(?:ms|[smhdwy]))*)
  | (?P<ident>[a-zA-Z_:][a-zA-Z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^=<>(){}\[\],@:])
  | (?P<var>\$\{[^}]*\}|\$\w+|\[\[[^\]]*\]\])
""", re.VERBOSE)

GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
AGGREGATORS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk", "topk",
               "quantile", "limitk", "limit_ratio"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "inf", "nan", "group_left", "group_right"}


class PromQLRefError(ValueError):
    pass


def tokens(expr):
    out, pos = [], 0
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m:
            raise PromQLRefError(f"cannot read {expr[pos:pos + 20]!r} at offset {pos}")
        pos = m.end()
        if m.lastgroup != "space":
            out.append((m.lastgroup, m.group()))
    return out


def unquote(s):
    if s[0] == "`":
        return s[1:-1]
    return re.sub(r"\\(.)", r"\1", s[1:-1])


def references(expr):
    """Returns (selectors, grouping_labels): selectors as [(metric name or None, [(label, op, value)])]."""
    toks = tokens(expr)
    selectors, grouping = [], []
    i, n = 0, len(toks)

    def matchers(j):  # toks[j] is '{'; returns (matchers, index after '}')
        found = []
        j += 1
        while j < n and toks[j][1] != "}":
            if toks[j][1] == ",":
                j += 1
                continue
            if j + 2 >= n or toks[j][0] != "ident" or toks[j + 1][1] not in ("=", "!=", "=~", "!~") \
                    or toks[j + 2][0] != "str":
                raise PromQLRefError(f"unreadable label matcher near {' '.join(t[1] for t in toks[j:j + 3])!r}")
            found.append((toks[j][1], toks[j + 1][1], unquote(toks[j + 2][1])))
            j += 3
        return found, j + 1

    while i < n:
        kind, val = toks[i]
        nxt = toks[i + 1][1] if i + 1 < n else None
        if val == "[":
            while i < n and toks[i][1] != "]":
                i += 1
            i += 1
        elif val == "{":
            m, i = matchers(i)
            selectors.append((None, m))
        elif kind == "ident":
            if val in GROUPING and nxt == "(":
                i += 2
                while i < n and toks[i][1] != ")":
                    if toks[i][0] == "ident":
                        grouping.append(toks[i][1])
                    i += 1
                i += 1
            elif nxt == "(" or (val in AGGREGATORS and nxt in ("by", "without")):
                i += 1  # a function or an aggregation
            elif val in KEYWORDS or val in GROUPING:
                i += 2 if val == "offset" else 1
            elif nxt == "{":
                m, i = matchers(i + 1)
                selectors.append((val, m))
            else:
                selectors.append((val, []))
                i += 1
        else:
            i += 1
    return selectors, grouping
