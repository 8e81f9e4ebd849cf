"""Render tool_choice and response_format cases with the Kimi-K3 Jinja port.

Usage: python3 gen_format_cases.py PATH/TO/Kimi-K3.jinja > format_cases.json

The template is llama.cpp's models/templates/Kimi-K3.jinja (not copied into
this repository). Rendering uses Jinja2 with a `tojson` that takes
ensure_ascii (Jinja2's own has no such argument) and otherwise json.dumps, and
raise_exception as a global. Before writing anything the script renders every
case of chat_cases.json (the shared fixtures) and stops unless each comes out
byte for byte as recorded there, so the setup is the one the fixtures used.
"""

import json
import os
import sys

import jinja2


def environment():
    env = jinja2.Environment(extensions=["jinja2.ext.loopcontrols"])

    def tojson(value, ensure_ascii=True, indent=None):
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def render(template, inp):
    kwargs = dict(inp)
    return template.render(**kwargs)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                "required": ["city"],
            },
        },
    }
]
USER = [{"role": "user", "content": "Weather in Paris?"}]
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number", "minimum": 0}},
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}

CASES = [
    ("tool_choice_auto", {"messages": USER, "tools": TOOLS, "tool_choice": "auto"}),
    ("tool_choice_none", {"messages": USER, "tools": TOOLS, "tool_choice": "none"}),
    ("tool_choice_required", {"messages": USER, "tools": TOOLS, "tool_choice": "required"}),
    ("tool_choice_required_thinking_off", {"messages": USER, "tools": TOOLS, "tool_choice": "required", "thinking": False}),
    ("response_format_text", {"messages": USER, "response_format": {"type": "text"}}),
    ("response_format_json_object", {"messages": USER, "response_format": {"type": "json_object"}}),
    (
        "response_format_json_schema",
        {"messages": USER, "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": SCHEMA}}},
    ),
    (
        "response_format_json_schema_thinking_off_with_tools",
        {
            "messages": USER,
            "tools": TOOLS,
            "tool_choice": "none",
            "thinking": False,
            "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}},
        },
    ),
]


def main():
    with open(sys.argv[1]) as f:
        template = environment().from_string(f.read())
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "chat_cases.json")) as f:
        for case in json.load(f):
            got = render(template, case["input"])
            if got != case["rendered"]:
                sys.exit("setup does not reproduce chat_cases.json case %s" % case["name"])
    out = []
    for name, inp in CASES:
        inp = dict(inp, add_generation_prompt=True)
        out.append({"name": name, "input": inp, "rendered": render(template, inp)})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
