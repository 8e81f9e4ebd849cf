"""Regenerates pyjson_cases.json: what CPython's json module makes of tool-call
arguments and tool declarations, rendered the way encoding_k3.py does
(_xtml_type / json.dumps(value, ensure_ascii=False) per argument;
_json_compact(_deep_sort(tools)) for the declaration).

Run from this directory with any CPython 3: python3 gen_pyjson_cases.py
"""
import json
import random

random.seed(11)


def xtype(v):
    if isinstance(v, bool):
        return "boolean"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, dict):
        return "object"
    return "array"


def deep_sort(o):
    if isinstance(o, dict):
        return {k: deep_sort(v) for k, v in sorted(o.items())}
    if isinstance(o, list):
        return [deep_sort(v) for v in o]
    return o


args = [
    '{"city": "Paris", "days": 2}',
    '{"f": 2.50, "e": 1e2, "big": 1e16, "b2": 1.5e16, "small": 0.00001, "n": -0, "neg": -0.0, "x": 123456789.123456789}',
    '{"s": "line\\nbreak \\"q\\" \\\\ \\u0001 \\u001f \\u007f é 中 😀 \\u2028 <>&\'"}',
    '{"o": {"z": 1, "a": [true, false, null, {"k": "v"}]}, "arr": [], "obj": {}}',
    '{"dup": 1, "other": 2, "dup": 3}',
    '{"nested": {"deep": {"deeper": [1.0, 2.25, -3e-7, 1e300, 12345678901234567890]}}}',
    '{"unicode_key_é": "v", "Z": "upper", "a": "lower"}',
    '  {"spaced": true}  ',
    '{"tab\\tkey": "x\\ty"}',
]
for i in range(20):
    v = random.choice([random.random() * 10 ** random.randint(-12, 25),
                       random.randint(-10 ** 20, 10 ** 20),
                       -random.random() * 10 ** random.randint(-8, 8)])
    args.append(json.dumps({"v": v}))
cases = []
for a in args:
    p = json.loads(a)
    rendered = [[k, xtype(v), v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)] for k, v in p.items()]
    cases.append({"arguments": a, "arguments_rendered": rendered})
tools = [
    {"type": "function", "function": {"name": "é_tool", "description": "Ünïcode \"quoted\" \n newline <tag> & amp",
                                      "parameters": {"type": "object", "properties": {
                                          "z": {"type": "number", "default": 1.0, "maximum": 1e20},
                                          "a": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}}},
                                          "required": ["z"]}}},
    {"function": {"name": "b"}, "type": "function"},
]
out = {
    "_provenance": "Generated with CPython 3.11.7's json module, following encoding_k3.py: each tool-call argument is rendered as (key, _xtml_type(value), value if str else json.dumps(value, ensure_ascii=False)) after json.loads of the arguments string; tools_compact is json.dumps(_deep_sort(tools), ensure_ascii=False, separators=(',', ':')).",
    "cases": cases,
    "tools": tools,
    "tools_compact": json.dumps(deep_sort(tools), ensure_ascii=False, separators=(",", ":")),
}
json.dump(out, open("pyjson_cases.json", "w"), ensure_ascii=False, indent=1)
