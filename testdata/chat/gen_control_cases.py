"""Render K3's thinking controls with the Kimi-K3 Jinja port.

Usage: python3 gen_control_cases.py PATH/TO/Kimi-K3.jinja > control_cases.json

The same template and Jinja2 setup as gen_format_cases.py (imported from it),
checked the same way: every case of chat_cases.json and format_cases.json is
re-rendered first and the script stops unless each comes out byte for byte as
recorded.

Each case names the template variables it renders with (thinking,
thinking_effort) and whether the reasoning of earlier turns is kept:
"keep": "all" is the template as it stands (it renders the reasoning_content
of every assistant turn); "keep": "current" is preserve_thinking=false, which
the template has no variable for: the script renders the same template on the
messages with reasoning_content removed from every assistant turn before the
last user message (the reasoning of the current turn's tool loop stays).
"""

import copy
import json
import os
import sys

from gen_format_cases import TOOLS, environment, render

CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}

# Two finished turns with reasoning, then a tool loop in the current turn.
MULTI = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "reasoning_content": "Two plus two is four.", "content": "4"},
    {"role": "user", "content": "And the weather in Paris?"},
    {"role": "assistant", "reasoning_content": "I should call the weather tool.", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21C"},
]
# Earlier turns with reasoning, the last message a user's.
FOLLOW_UP = [
    {"role": "user", "content": "Name a prime."},
    {"role": "assistant", "reasoning_content": "2 is the smallest prime.", "content": "2"},
    {"role": "user", "content": "Another one?"},
    {"role": "assistant", "reasoning_content": "  \n3 is next.", "content": "3"},
    {"role": "user", "content": "One more, thinking first."},
]

CASES = [
    ("effort_max", FOLLOW_UP, {"thinking": True, "thinking_effort": "max"}, "all", False),
    ("effort_low_keep_all", FOLLOW_UP, {"thinking": True, "thinking_effort": "low"}, "all", False),
    ("effort_high_keep_current", FOLLOW_UP, {"thinking": True, "thinking_effort": "high"}, "current", False),
    ("keep_all_tool_loop", MULTI, {"thinking": True, "thinking_effort": "max"}, "all", True),
    ("keep_current_tool_loop", MULTI, {"thinking": True, "thinking_effort": "max"}, "current", True),
    ("thinking_off_multi_turn", FOLLOW_UP, {"thinking": False}, "all", False),
    ("thinking_off_tool_loop", MULTI, {"thinking": False}, "current", True),
]


def drop_earlier_reasoning(messages):
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    out = copy.deepcopy(messages)
    for m in out[:last_user]:
        m.pop("reasoning_content", None)
    return out


def main():
    with open(sys.argv[1]) as f:
        template = environment().from_string(f.read())
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("chat_cases.json", "format_cases.json"):
        with open(os.path.join(here, name)) as f:
            for case in json.load(f):
                if render(template, case["input"]) != case["rendered"]:
                    sys.exit("setup does not reproduce %s case %s" % (name, case["name"]))
    out = []
    for name, messages, kwargs, keep, tools in CASES:
        inp = dict(kwargs, messages=messages, add_generation_prompt=True)
        if tools:
            inp["tools"] = TOOLS
        shown = dict(inp)
        if keep == "current":
            inp["messages"] = drop_earlier_reasoning(messages)
        out.append({"name": name, "keep": keep, "input": shown, "rendered": render(template, inp)})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
