package chat

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/tokenizer"
)

// turn is one assistant turn with tool calls, rendered by the Jinja port:
// gen is exactly what the model would generate after the prompt that ends
// before it, ids its token ids.
type turn struct {
	name string
	opts Options
	want Message
	gen  string
	ids  []int
}

// renderedTurns renders every assistant turn with tool calls in msgs: the
// conversation up to it with the generation prompt, and with the turn and
// no generation prompt; the difference, less the stop token, is the turn.
func renderedTurns(t *testing.T, tok *tokenizer.Tokenizer, name string, msgs []Message, opts Options) []turn {
	var out []turn
	for k, m := range msgs {
		if m.Role != "assistant" || len(m.ToolCalls) == 0 {
			continue
		}
		head, full := opts, opts
		head.NoGenerationPrompt, full.NoGenerationPrompt = false, true
		hs, err := Render(msgs[:k], head)
		require.NoError(t, err)
		fs, err := Render(msgs[:k+1], full)
		require.NoError(t, err)
		h, f := joined(hs), joined(fs)
		require.True(t, strings.HasPrefix(f, h))
		require.True(t, strings.HasSuffix(f, EndOfMsg))
		hid, fid := Tokenize(tok, hs), Tokenize(tok, fs)
		require.Equal(t, hid, fid[:len(hid)], "segments tokenize apart, so the prompt's ids are a prefix")
		out = append(out, turn{name: name, opts: opts, want: m, gen: strings.TrimSuffix(f[len(h):], EndOfMsg), ids: fid[len(hid) : len(fid)-1]})
	}
	return out
}

// extraConversations are tool-call turns beyond the fixtures': several
// calls, every argument type, the Python-JSON cases, text that looks like
// markup inside values and names.
func extraConversations(t *testing.T) (names []string, convs [][]Message) {
	raw, err := os.ReadFile("../testdata/chat/pyjson_cases.json")
	require.NoError(t, err)
	var fx struct {
		Cases []struct {
			Arguments string `json:"arguments"`
		} `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(raw, &fx))
	var calls []ToolCall
	for _, c := range fx.Cases {
		calls = append(calls, ToolCall{ID: "py", Type: "function", Function: FunctionCall{Name: "f", Arguments: c.Arguments}})
	}
	user := Message{Role: "user", Content: "go"}
	add := func(name string, m Message) {
		names = append(names, name)
		convs = append(convs, []Message{user, m})
	}
	add("python json arguments", Message{Role: "assistant", ToolCalls: calls})
	add("every type and markup in values", Message{Role: "assistant", Content: "Let me check.", ReasoningContent: "Two calls.",
		ToolCalls: []ToolCall{
			{ID: "a", Type: "function", Function: FunctionCall{Name: `q"&<x>`, Arguments: `{"s":"a<|open|>b<|sep|>c <|close|>json<|sep|> <|close|>argument \"q\" \\ é","n":-1.5e-7,"t":true,"f":false,"z":null,"o":{"k":[1,{"x":"y"}]},"a":[],"e":""}`}},
			{ID: "b", Type: "function", Function: FunctionCall{Name: "second", Arguments: `{}`}},
			{ID: "c", Type: "function", Function: FunctionCall{Name: "third", Arguments: ``}},
			{ID: "d", Type: "function", Function: FunctionCall{Name: "raw", Arguments: `{"unclosed": [1, 2`}},
			{ID: "e", Type: "function", Function: FunctionCall{Name: "k", Arguments: `{"key \"with\" & quotes":"v","k2":1}`}},
		}})
	return names, convs
}

// allTurns is every tool-call turn of the fixtures and the extra
// conversations, with thinking on and off.
func allTurns(t *testing.T, tok *tokenizer.Tokenizer) []turn {
	var out []turn
	for _, c := range loadCases(t) {
		msgs, opts := caseInput(t, c)
		out = append(out, renderedTurns(t, tok, c.Name, msgs, opts)...)
	}
	require.Len(t, out, 2, "the fixtures' tool-call turns: tool_roundtrip, tool_call_raw_arguments")
	names, convs := extraConversations(t)
	for i, msgs := range convs {
		for _, thinking := range []bool{true, false} {
			out = append(out, renderedTurns(t, tok, names[i], msgs, Options{Thinking: thinking, Effort: "max"})...)
		}
	}
	return out
}

// jsonEqual reports whether two JSON texts hold the same value (numbers
// compared as float64, as a client's JSON.parse does).
func jsonEqual(t *testing.T, want, got string) {
	t.Helper()
	var w, g any
	require.NoError(t, json.Unmarshal([]byte(want), &w), want)
	require.NoError(t, json.Unmarshal([]byte(got), &g), got)
	require.Equal(t, w, g)
}

// checkTurn checks a parse of a whole turn against what was rendered.
func checkTurn(t *testing.T, tr turn, out Output) {
	t.Helper()
	require.NoError(t, out.Err)
	require.Equal(t, tr.want.Content, out.Content)
	if tr.opts.Thinking {
		require.Equal(t, tr.want.ReasoningContent, out.Reasoning)
	}
	require.Len(t, out.Calls, len(tr.want.ToolCalls))
	for i, c := range out.Calls {
		w := tr.want.ToolCalls[i].Function
		require.Equal(t, w.Name, c.Name)
		require.Equal(t, CallID("resp", i), c.ID)
		switch _, err := parseJSON([]byte(w.Arguments)); {
		case strings.TrimFunc(w.Arguments, pySpace) == "":
			require.Equal(t, "{}", c.Arguments)
		case err != nil:
			require.Equal(t, w.Arguments, c.Arguments, "a json block comes back as its text")
		default:
			jsonEqual(t, w.Arguments, c.Arguments)
		}
	}
}

// collect runs chunks through a fresh parser and checks the event
// invariants: Raw adds up to the input, each call's fragments to its
// arguments, and the text events to the result.
func collect(t *testing.T, opts Options, chunks []string, cut bool) Output {
	t.Helper()
	p := opts.NewParserWith(ParseOptions{ResponseID: "resp"})
	var evs []Event
	for _, c := range chunks {
		evs = append(evs, p.Events(c)...)
	}
	evs = append(evs, p.FinishEvents(cut)...)
	out := p.Output()
	checkEvents(t, strings.Join(chunks, ""), evs, out)
	return out
}

// parse is collect without the checks, for loops over many cuts: the
// output and the events' Raw joined.
func parse(opts Options, chunks []string, cut bool) (Output, string) {
	p := opts.NewParserWith(ParseOptions{ResponseID: "resp"})
	var raw strings.Builder
	for _, c := range chunks {
		for _, e := range p.Events(c) {
			raw.WriteString(e.Raw)
		}
	}
	for _, e := range p.FinishEvents(cut) {
		raw.WriteString(e.Raw)
	}
	return p.Output(), raw.String()
}

func checkEvents(t *testing.T, text string, evs []Event, out Output) {
	t.Helper()
	var raw, reasoning, content strings.Builder
	args := map[int]*strings.Builder{}
	var started, done []int
	for _, e := range evs {
		raw.WriteString(e.Raw)
		switch e.Kind {
		case Reasoning:
			reasoning.WriteString(e.Text)
		case Content:
			content.WriteString(e.Text)
		case CallStart:
			require.Len(t, started, len(done), "a call starts after the previous one ended")
			require.Equal(t, len(started), e.Call)
			started = append(started, e.Call)
			args[e.Call] = &strings.Builder{}
		case CallArguments:
			require.Equal(t, len(started)-1, e.Call)
			args[e.Call].WriteString(e.Text)
		case CallDone:
			require.Equal(t, len(started)-1, e.Call)
			done = append(done, e.Call)
		case CallFailed:
			require.Equal(t, len(started)-1, e.Call)
			require.Error(t, out.Err)
		}
	}
	require.Equal(t, text, raw.String(), "decode(parse(x)) == x: no byte lost")
	r, c := out.Reasoning, out.Content
	if r == "" && reasoning.Len() > 0 {
		r = reasoning.String() // a turn without markers: streamed as reasoning, reported as content
		require.Equal(t, c, r)
		c = content.String()
	}
	require.Equal(t, r, reasoning.String())
	require.Equal(t, c, content.String())
	require.Len(t, out.Calls, len(done))
	for i, call := range out.Calls {
		require.Equal(t, call.Arguments, args[i].String(), "fragments add up to the arguments")
	}
}

// TestParseRenderedCalls: every rendered tool-call turn parses back to the
// calls that were rendered: whole, cut in two at every byte, one byte at a
// time, and token by token from its ids.
func TestParseRenderedCalls(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	for _, tr := range allTurns(t, tok) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			want := collect(t, tr.opts, []string{tr.gen}, false)
			checkTurn(t, tr, want)
			for i := range len(tr.gen) + 1 {
				got, raw := parse(tr.opts, []string{tr.gen[:i], tr.gen[i:]}, false)
				if raw != tr.gen || !reflect.DeepEqual(want, got) {
					t.Fatalf("cut at byte %d: %+v, want %+v (raw %q)", i, got, want, raw)
				}
			}
			checkTurn(t, tr, collect(t, tr.opts, strings.Split(tr.gen, ""), false))

			tp := NewTokenParserWith(tok, tr.opts, ParseOptions{ResponseID: "resp"})
			var evs []Event
			for _, id := range tr.ids {
				evs = append(evs, tp.Events(id)...)
			}
			evs = append(evs, tp.FinishEvents(false)...)
			checkEvents(t, tr.gen, evs, tp.Output())
			checkTurn(t, tr, tp.Output())
		})
	}
}

// TestParseCutCalls: a turn cut by the length limit at any byte loses
// nothing: the calls completed before the cut are kept, and a call cut in
// the middle comes back as content, with an error.
func TestParseCutCalls(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	for _, tr := range allTurns(t, tok) {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			const openTools, closeTools, closeCall = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>", "<|close|>call<|sep|>"
			toolsOpen := strings.Index(tr.gen, openTools) + len(openTools)
			toolsEnd := strings.Index(tr.gen, closeTools) + len(closeTools)
			for i := range len(tr.gen) {
				prefix := tr.gen[:i]
				out := collect(t, tr.opts, []string{prefix}, true)
				require.Len(t, out.Calls, strings.Count(prefix, closeCall))
				if i < toolsOpen || i >= toolsEnd {
					require.NoError(t, out.Err)
					continue
				}
				// What follows the last complete call is the cut one.
				from := toolsOpen
				if last := strings.LastIndex(prefix, closeCall); last >= 0 {
					from = last + len(closeCall)
				}
				if tail := prefix[from:]; tail != "" {
					require.ErrorIs(t, out.Err, ErrToolCall)
					require.ErrorContains(t, out.Err, "cut off by the length limit")
					require.True(t, strings.HasSuffix(out.Content, tail), "content %q ends with the cut call %q", out.Content, tail)
				} else {
					require.NoError(t, out.Err)
				}
			}
		})
	}
}

func TestMalformedCalls(t *testing.T) {
	const head = "r<|close|>think<|sep|><|open|>response<|sep|>c<|close|>response<|sep|><|open|>tools<|sep|>"
	good := `<|open|>call tool="f" index="1"<|sep|><|open|>argument key="a" type="number"<|sep|>1<|close|>argument<|sep|><|close|>call<|sep|>`
	tests := []struct {
		name, tail, why, content string
		calls                    int
	}{
		{"unknown tag in the call", `<|open|>call tool="g" index="2"<|sep|><|open|>arg key="a"<|sep|>1`, "unexpected tag",
			`<|open|>call tool="g" index="2"<|sep|><|open|>arg key="a"<|sep|>1`, 1},
		{"unknown argument type", `<|open|>call tool="g" index="2"<|sep|><|open|>argument key="a" type="int"<|sep|>1<|close|>argument<|sep|>`, `unknown type "int"`,
			`<|open|>call tool="g" index="2"<|sep|><|open|>argument key="a" type="int"<|sep|>1<|close|>argument<|sep|>`, 1},
		{"number that is not a number", `<|open|>call tool="g" index="2"<|sep|><|open|>argument key="a" type="number"<|sep|>two<|close|>argument<|sep|><|close|>call<|sep|>`, `"a" is not a JSON number`,
			`<|open|>call tool="g" index="2"<|sep|><|open|>argument key="a" type="number"<|sep|>two<|close|>argument<|sep|><|close|>call<|sep|>`, 1},
		{"object that is an array", `<|open|>call tool="g" index="2"<|sep|><|open|>argument key="a" type="object"<|sep|>[1]<|close|>argument<|sep|>`, "not a JSON object",
			`<|open|>call tool="g" index="2"<|sep|><|open|>argument key="a" type="object"<|sep|>[1]<|close|>argument<|sep|>`, 1},
		{"text between calls", `junk<|close|>tools<|sep|>`, `unexpected text in the tools block`, `junk<|close|>tools<|sep|>`, 1},
		{"call without a name", `<|open|>call index="2"<|sep|>`, "without a tool name", `<|open|>call index="2"<|sep|>`, 1},
		{"json after arguments", `<|open|>call tool="g"<|sep|><|open|>argument key="a" type="null"<|sep|>null<|close|>argument<|sep|><|open|>json type="object"<|sep|>{}`, "unexpected tag",
			`<|open|>call tool="g"<|sep|><|open|>argument key="a" type="null"<|sep|>null<|close|>argument<|sep|><|open|>json type="object"<|sep|>{}`, 1},
		{"message ends inside a call", `<|open|>call tool="g"<|sep|><|close|>message<|sep|>`, "unexpected tag", `<|open|>call tool="g"<|sep|><|close|>message<|sep|>`, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := head + good + tc.tail
			for _, chunks := range [][]string{{text}, strings.Split(text, "")} {
				out := collect(t, DefaultOptions(), chunks, false)
				require.ErrorIs(t, out.Err, ErrToolCall)
				require.ErrorContains(t, out.Err, tc.why)
				require.Equal(t, "r", out.Reasoning)
				require.Equal(t, "c"+tc.content, out.Content)
				require.Len(t, out.Calls, tc.calls)
				require.Equal(t, Call{ID: CallID("resp", 0), Name: "f", Arguments: `{"a":1}`}, out.Calls[0])
			}
		})
	}
}

func TestCallEvents(t *testing.T) {
	text := `hi<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get" index="1"<|sep|>` +
		`<|open|>argument key="city" type="string"<|sep|>Pa"ris<|close|>argument<|sep|><|open|>argument key="days" type="number"<|sep|>2<|close|>argument<|sep|>` +
		`<|close|>call<|sep|><|open|>call tool="raw" index="2"<|sep|><|open|>json type="object"<|sep|>not json<|close|>json<|sep|><|close|>call<|sep|>` +
		`<|close|>tools<|sep|><|close|>message<|sep|>`
	p := Options{}.NewParserWith(ParseOptions{ResponseID: "chatcmpl-1"})
	var got []Event
	for _, e := range append(p.Events(text), p.FinishEvents(false)...) {
		if e.Kind != Markup {
			e.Raw = ""
			got = append(got, e)
		}
	}
	id0, id1 := CallID("chatcmpl-1", 0), CallID("chatcmpl-1", 1)
	require.Equal(t, []Event{
		{Kind: Content, Text: "hi"},
		{Kind: CallStart, Call: 0, ID: id0, Name: "get"},
		{Kind: CallArguments, Call: 0, Text: `{"city":"`},
		{Kind: CallArguments, Call: 0, Text: `Pa\"ris`},
		{Kind: CallArguments, Call: 0, Text: `"`},
		{Kind: CallArguments, Call: 0, Text: `,"days":`},
		{Kind: CallArguments, Call: 0, Text: `2`},
		{Kind: CallArguments, Call: 0, Text: `}`},
		{Kind: CallDone, Call: 0},
		{Kind: CallStart, Call: 1, ID: id1, Name: "raw"},
		{Kind: CallArguments, Call: 1, Text: `not json`},
		{Kind: CallDone, Call: 1},
	}, got)
	require.Regexp(t, `^call_[0-9a-f]{24}$`, id0)
	require.NotEqual(t, id0, id1)
	require.Equal(t, id0, CallID("chatcmpl-1", 0), "ids are a function of the response id and index")

	// parallel_tool_calls: false keeps the first call.
	p = Options{}.NewParserWith(ParseOptions{ResponseID: "chatcmpl-1", MaxCalls: 1})
	evs := append(p.Events(text), p.FinishEvents(false)...)
	out := p.Output()
	checkEvents(t, text, evs, out)
	require.NoError(t, out.Err)
	require.Equal(t, []Call{{ID: id0, Name: "get", Arguments: `{"city":"Pa\"ris","days":2}`}}, out.Calls)
	require.Equal(t, "hi", out.Content)
}

// A forced call: the prompt ends inside the tools block, or inside the
// named call's tag, and the parser starts there.
func TestForcedCallParse(t *testing.T) {
	required := Options{Thinking: true, ToolChoice: "required"}
	out := collect(t, required, []string{`<|open|>call tool="f" index="1"<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`}, false)
	require.NoError(t, out.Err)
	require.Equal(t, []Call{{ID: CallID("resp", 0), Name: "f", Arguments: "{}"}}, out.Calls)
	require.Empty(t, out.Reasoning)
	require.Empty(t, out.Content)

	named := Options{Thinking: true, ToolName: "get"}
	out = collect(t, named, []string{`<|open|>argument key="x" type="boolean"<|sep|>true<|close|>argument<|sep|><|close|>call<|sep|>`}, false)
	require.NoError(t, out.Err, "a turn may stop right after its last call")
	require.NoError(t, out.Err)
	require.Equal(t, []Call{{ID: CallID("resp", 0), Name: "get", Arguments: `{"x":true}`}}, out.Calls)

	// What random weights write there is content, with the error.
	out = collect(t, named, []string{"gibberish [BOS]"}, true)
	require.ErrorIs(t, out.Err, ErrToolCall)
	require.Equal(t, "gibberish [BOS]", out.Content)
	require.Empty(t, out.Calls)
}

// From token ids, a marker counts only as the special token: values, keys
// and tool names that spell markers in ordinary tokens (as the renderer
// writes them) come back exactly, which the text alone cannot tell.
func TestTokenParserLiteralMarkers(t *testing.T) {
	tok, err := tokenizer.Load("../testdata/tokenizer")
	require.NoError(t, err)
	reply := Message{Role: "assistant", Content: "see <|open|>tools<|sep|> here", ReasoningContent: "a <|close|>think<|sep|> b",
		ToolCalls: []ToolCall{
			{ID: "a", Type: "function", Function: FunctionCall{Name: `f<|sep|>`, Arguments: `{"v":"x<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|end_of_msg|>","k<|sep|>":"<|open|>"}`}},
			{ID: "b", Type: "function", Function: FunctionCall{Name: "g", Arguments: `raw <|close|>json<|sep|> text`}},
		}}
	for _, thinking := range []bool{true, false} {
		opts := Options{Thinking: thinking, Effort: "max"}
		trs := renderedTurns(t, tok, "literal markers", []Message{{Role: "user", Content: "go"}, reply}, opts)
		require.Len(t, trs, 1)
		tr := trs[0]
		p := NewTokenParserWith(tok, opts, ParseOptions{ResponseID: "resp"})
		var evs []Event
		for _, id := range tr.ids {
			evs = append(evs, p.Events(id)...)
		}
		evs = append(evs, p.FinishEvents(false)...)
		checkEvents(t, tr.gen, evs, p.Output())
		checkTurn(t, tr, p.Output())

		// The text alone is ambiguous there: it does not parse the same.
		out, _ := parse(opts, []string{tr.gen}, false)
		require.NotEqual(t, p.Output(), out)
	}
}

// A forced named call cut before K3 wrote anything of it fails as a cut
// call, like any other.
func TestForcedCallCutAtOnce(t *testing.T) {
	out := collect(t, Options{ToolName: "get"}, nil, true)
	require.ErrorIs(t, out.Err, ErrToolCall)
	require.ErrorContains(t, out.Err, "cut off by the length limit")
	require.Empty(t, out.Calls)
	require.Empty(t, out.Content)
}
