package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/store"
	"github.com/stretchr/testify/require"
)

// Function tools on the Responses API. The exact-response memo does not
// serve /v1/responses (every response is a job), so the tests of a
// well-formed call serve a scripted model that generates the token ids of
// an assistant turn the K3 renderer writes (what K3 would generate): the
// response then runs the real output path (parser, items, events, store)
// on real tokens, and the model records every prompt it is given, so the
// round trips are checked token for token against chat's rendering. The
// forced tool_choice test runs k3-tiny itself.

// weatherFlat is weatherTool in the Responses API's flat shape.
const weatherFlat = `{"type":"function","name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}},"required":["city"]}}`

func respToolsBody(input, extra string) string {
	return fmt.Sprintf(`{"model":%q,"temperature":0,"input":%s,"max_output_tokens":256,"tools":[%s]%s}`, tinyID, input, weatherFlat, extra)
}

// scriptedTurn serves a scripted model that answers every prompt with
// reply's tokens (after msgs, rendered with the weather tool) and the end
// of the turn, without waiting for a go-ahead; each whole prompt it is
// given (the kept conversation's tokens and the new ones) comes on the
// channel.
func scriptedTurn(t *testing.T, msgs []chat.Message, reply chat.Message, configure func(*Options)) (<-chan []int, *Server, string) {
	t.Helper()
	_, tok := tiny(t)
	toks := append(turnTokens(t, msgs, reply, weatherOptions()), chat.StopTokens(tok)[0])
	m := &recorded{scripted: newScripted(toks...), prompts: make(chan []int, 16)}
	close(m.proceed)
	s, base := startServerWith(t, m, configure)
	return m.prompts, s, base
}

// recorded is a scripted model that also sends every whole prompt.
type recorded struct {
	*scripted
	prompts chan []int
}

func (m *recorded) NewSession() Session {
	return &recordedSession{Session: m.scripted.NewSession(), m: m}
}

type recordedSession struct {
	Session
	m *recorded
}

func (s *recordedSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	s.m.prompts <- append(s.Tokens(), prompt...)
	res, err := s.Session.Generate(ctx, prompt, opts, emit)
	<-s.m.started // the scripted model's own record of prompt, not needed here
	return res, err
}

// weatherHistory is the conversation after the primed turn's two calls
// (ids and arguments as the response named them) and their results,
// "sunny" and "rain", as chat messages.
func weatherHistory(user []chat.Message, ids, args [2]string) []chat.Message {
	asst := chat.Message{Role: "assistant", ReasoningContent: "Call the tool."}
	for i := range ids {
		asst.ToolCalls = append(asst.ToolCalls, chat.ToolCall{ID: ids[i], Type: "function", Function: chat.FunctionCall{Name: "get_weather", Arguments: args[i]}})
	}
	return append(append([]chat.Message{}, user...), asst,
		chat.Message{Role: "tool", ToolCallID: ids[0], Content: "sunny"},
		chat.Message{Role: "tool", ToolCallID: ids[1], Content: "rain"})
}

func createResp(t *testing.T, base, body string) Response {
	t.Helper()
	code, _, b := post(t, base+"/v1/responses", body)
	require.Equal(t, http.StatusOK, code, string(b))
	return decodeResponse(t, b)
}

// streamResp posts body streamed and returns its events.
func streamResp(t *testing.T, base, body string) []ResponseEvent {
	t.Helper()
	code, _, b := post(t, base+"/v1/responses", strings.Replace(body, `{`, `{"stream":true,`, 1))
	require.Equal(t, http.StatusOK, code, string(b))
	return parseNamed(t, string(b))
}

// callItems are a response's function_call items.
func callItems(r Response) []OutputItem {
	var out []OutputItem
	for _, it := range r.Output {
		if it.Type == "function_call" {
			out = append(out, it)
		}
	}
	return out
}

// checkCallEvents checks that every function_call item streams as the
// Responses API streams it (output_item.added with empty arguments, the
// argument deltas, function_call_arguments.done with all of them,
// output_item.done) and returns the items the events build.
func checkCallEvents(t *testing.T, evs []ResponseEvent) []OutputItem {
	t.Helper()
	var items []OutputItem
	var open *OutputItem
	for i, ev := range evs {
		require.Equal(t, i, ev.SequenceNumber)
		switch ev.Type {
		case "response.output_item.added":
			if ev.Item.Type != "function_call" {
				continue
			}
			require.Nil(t, open, "one call at a time")
			require.Equal(t, "", ev.Item.Arguments)
			require.Equal(t, "in_progress", ev.Item.Status)
			require.Regexp(t, `^fc_`, ev.Item.ID)
			require.Regexp(t, `^call_[0-9a-f]{24}$`, ev.Item.CallID)
			it := *ev.Item
			open = &it
		case "response.function_call_arguments.delta":
			require.NotNil(t, open)
			require.Equal(t, open.ID, ev.ItemID)
			require.NotNil(t, ev.OutputIndex)
			require.NotEmpty(t, *ev.Delta)
			open.Arguments += *ev.Delta
		case "response.function_call_arguments.done":
			require.NotNil(t, open)
			require.Equal(t, open.ID, ev.ItemID)
			require.Equal(t, open.Arguments, *ev.Arguments, "the deltas concatenate to the arguments")
			require.Equal(t, open.Name, ev.Name)
		case "response.output_item.done":
			if ev.Item.Type != "function_call" {
				continue
			}
			require.NotNil(t, open)
			require.Equal(t, open.ID, ev.Item.ID)
			require.Equal(t, open.Arguments, ev.Item.Arguments)
			items = append(items, *ev.Item)
			open = nil
		}
	}
	require.Nil(t, open, "every call item ends")
	return items
}

func TestResponsesToolCalls(t *testing.T) {
	t.Parallel()
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	_, withSt := withStore(t)
	prompts, _, base := scriptedTurn(t, user, weatherCalls, withSt)
	_, tok := tiny(t)
	input := `"Weather in Paris?"`

	for _, tc := range []struct {
		name, extra string
		calls       int
	}{{"parallel", "", 2}, {"one call", `,"parallel_tool_calls":false`, 1}, {"max_tool_calls", `,"max_tool_calls":1`, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			body := respToolsBody(input, tc.extra)
			r := createResp(t, base, body)
			prompt := <-prompts
			want, err := chat.Prompt(tok, user, weatherOptions())
			require.NoError(t, err)
			require.Equal(t, want, prompt, "the flat tool renders as chat's nested one")
			require.Equal(t, "completed", r.Status, "%+v", r)
			require.Nil(t, r.OutputError)
			require.Equal(t, !strings.Contains(tc.extra, "parallel"), r.ParallelToolCalls)
			require.JSONEq(t, `[`+weatherFlat+`]`, compact(t, r.Tools), "the tools are echoed as sent")
			require.Equal(t, "reasoning", r.Output[0].Type)
			require.Equal(t, "Call the tool.", r.Output[0].Content[0].Text)
			calls := callItems(r)
			require.Len(t, calls, tc.calls)
			require.Len(t, r.Output, 1+tc.calls, "no empty message after the calls")
			for i, c := range calls {
				require.Equal(t, "completed", c.Status)
				require.Equal(t, "get_weather", c.Name)
				require.Equal(t, chat.CallID(r.ID, i), c.CallID)
				require.Regexp(t, `^fc_`, c.ID)
			}
			requireJSONEqual(t, `{"city":"Paris","days":2}`, calls[0].Arguments)
			if tc.calls == 2 {
				require.Equal(t, "city=Lyon", calls[1].Arguments, "a json block comes back as its text")
			}
			var wire []map[string]any
			require.NoError(t, json.Unmarshal([]byte(compact(t, r.Output)), &wire))
			require.Equal(t, map[string]any{"type": "function_call", "id": calls[0].ID, "call_id": calls[0].CallID,
				"name": "get_weather", "arguments": calls[0].Arguments, "status": "completed"}, wire[1], "the official item shape")

			evs := streamResp(t, base, body)
			<-prompts
			last := evs[len(evs)-1]
			require.Equal(t, "response.completed", last.Type)
			streamed := checkCallEvents(t, evs)
			require.Equal(t, callItems(*last.Response), streamed, "the events build the final items")
			require.Len(t, streamed, tc.calls)
			for i, c := range streamed {
				require.Equal(t, calls[i].Name, c.Name)
				require.Equal(t, calls[i].Arguments, c.Arguments, "streamed fragments concatenate to the non-streamed arguments")
			}

			// Stored: retrieved as created, and a resumed stream
			// replays the same events.
			code, got := get(t, base+"/v1/responses/"+r.ID)
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, r, decodeResponse(t, got))
			code, live := get(t, base+"/v1/responses/"+r.ID+"?stream=true")
			require.Equal(t, http.StatusOK, code)
			replay := parseNamed(t, string(live))
			require.Equal(t, r, *replay[len(replay)-1].Response)
			require.Len(t, checkCallEvents(t, replay), tc.calls)
			code, tail := get(t, base+"/v1/responses/"+r.ID+"?stream=true&starting_after=5")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, replay[6:], parseNamed(t, string(tail)))
		})
	}

	// In the background: polled until done, the same items.
	bg := createResp(t, base, respToolsBody(input, `,"background":true`))
	<-prompts
	for bg.Status == "queued" || bg.Status == "in_progress" {
		code, b := get(t, base+"/v1/responses/"+bg.ID)
		require.Equal(t, http.StatusOK, code)
		bg = decodeResponse(t, b)
	}
	require.Equal(t, "completed", bg.Status)
	bgCalls := callItems(bg)
	require.Len(t, bgCalls, 2)
	for i, c := range bgCalls {
		require.Equal(t, chat.CallID(bg.ID, i), c.CallID)
	}
	requireJSONEqual(t, `{"city":"Paris","days":2}`, bgCalls[0].Arguments)

	// The round trip: the calls' results go back, by previous_response_id
	// or as the whole conversation in input items; both render exactly as
	// the chat endpoint renders the assistant's tool_calls and the tool
	// messages.
	r := createResp(t, base, respToolsBody(input, ""))
	<-prompts
	calls := callItems(r)
	results := fmt.Sprintf(`[{"type":"function_call_output","call_id":%q,"output":"sunny"},{"type":"function_call_output","call_id":%q,"output":[{"type":"input_text","text":"rain"}]}]`,
		calls[0].CallID, calls[1].CallID)
	history := weatherHistory(user, [2]string{calls[0].CallID, calls[1].CallID}, [2]string{calls[0].Arguments, calls[1].Arguments})
	want, err := chat.Prompt(tok, history, weatherOptions())
	require.NoError(t, err)

	chatBody := fmt.Sprintf(`{"model":%q,"temperature":0,"max_tokens":256,"tools":[%s],"messages":[{"role":"user","content":"Weather in Paris?"},`+
		`{"role":"assistant","reasoning_content":"Call the tool.","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}},{"id":%q,"type":"function","function":{"name":"get_weather","arguments":%q}}]},`+
		`{"role":"tool","tool_call_id":%q,"content":"sunny"},{"role":"tool","tool_call_id":%q,"content":"rain"}]}`,
		tinyID, weatherTool, calls[0].CallID, calls[0].Arguments, calls[1].CallID, calls[1].Arguments, calls[0].CallID, calls[1].CallID)
	code, _, b := post(t, base+"/v1/chat/completions", chatBody)
	require.Equal(t, http.StatusOK, code, string(b))
	require.Equal(t, want, <-prompts, "the chat endpoint's rendering")

	next := createResp(t, base, respToolsBody(results, `,"previous_response_id":"`+r.ID+`"`))
	require.Equal(t, want, <-prompts, "previous_response_id carries the calls")
	require.Equal(t, len(want), next.Usage.InputTokens)

	items := fmt.Sprintf(`[{"role":"user","content":"Weather in Paris?"},{"type":"reasoning","id":%q,"summary":[],"content":[{"type":"reasoning_text","text":"Call the tool."}]},%s,%s,%s]`,
		r.Output[0].ID, compact(t, calls[0]), compact(t, calls[1]), results[1:len(results)-1])
	again := createResp(t, base, respToolsBody(items, ""))
	require.Equal(t, want, <-prompts, "input items carry the calls")

	code, b = get(t, base+"/v1/responses/"+again.ID+"/input_items?order=asc")
	require.Equal(t, http.StatusOK, code)
	var list InputItemList
	require.NoError(t, json.Unmarshal(b, &list))
	var types []string
	for _, it := range list.Data {
		types = append(types, it.Type)
	}
	require.Equal(t, []string{"message", "function_call", "function_call", "function_call_output", "function_call_output"}, types)
	require.Equal(t, calls[0].ID, list.Data[1].ID)
	require.Equal(t, calls[1].CallID, list.Data[2].CallID)
	require.Equal(t, "rain", *list.Data[4].Output)
}

// TestResponsesMalformedCall: a tools block that does not parse is not a
// completed call: its raw text ends the message, the status is incomplete
// and output_error says why; an announced call that then fails is an
// incomplete item.
func TestResponsesMalformedCall(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	bad := tok.EncodeSpecial(`r<|close|>think<|sep|><|open|>response<|sep|>ok<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|><|open|>argument key="days" type="integer"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`)
	m := newScripted(append(bad, chat.StopTokens(tok)[0])...)
	close(m.proceed)
	_, base := startServerWith(t, m, nil)
	body := respToolsBody(`"Weather in Paris?"`, "")
	r := createResp(t, base, body)
	require.Equal(t, "incomplete", r.Status)
	require.Equal(t, finishMalformedCall, r.IncompleteDetails.Reason)
	require.NotNil(t, r.OutputError)
	require.Equal(t, finishMalformedCall, r.OutputError.Code)
	require.Contains(t, r.OutputError.Message, "days")
	calls := callItems(r)
	require.Len(t, calls, 1)
	require.Equal(t, "incomplete", calls[0].Status, "announced, then void")
	_, content := outputText(r)
	require.True(t, strings.HasPrefix(content, "ok<|open|>call"), content)
	require.True(t, strings.HasSuffix(content, `<|close|>message<|sep|>`), content)

	evs := streamResp(t, base, body)
	last := evs[len(evs)-1]
	require.Equal(t, "response.incomplete", last.Type)
	require.Equal(t, r.OutputError, last.Response.OutputError)
	require.Equal(t, callItems(*last.Response), checkCallEvents(t, evs))
}

// TestResponsesForcedTiny: a forced function on what k3-tiny writes: the
// prompt is chat's (the output equals a direct run on it, parsed as the
// server must), and whatever comes back is a completed call or says that
// it is not one.
func TestResponsesForcedTiny(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	for _, tc := range []struct {
		name, choice string
		opts         func(*chat.Options)
	}{
		{"required", `"required"`, func(o *chat.Options) { o.ToolChoice = "required" }},
		{"named", `{"type":"function","name":"get_weather"}`, func(o *chat.Options) { o.ToolName = "get_weather" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := weatherOptions()
			tc.opts(&opts)
			out, engineFinish, prompt := expectForced(t, "Weather in Paris?", opts, 24)
			t.Logf("k3-tiny, tool_choice %s: finish %s, %d calls, err %v", tc.name, engineFinish, len(out.Calls), out.Err)
			body := strings.Replace(respToolsBody(`"Weather in Paris?"`, `,"tool_choice":`+tc.choice), `"max_output_tokens":256`, `"max_output_tokens":24`, 1)
			r := createResp(t, base, body)
			require.Equal(t, len(prompt), r.Usage.InputTokens)
			require.JSONEq(t, tc.choice, string(r.ToolChoice), "tool_choice is echoed")
			require.Zero(t, r.Usage.OutputTokensDetails.ReasoningTokens, "a forced call starts past the thinking")
			calls := callItems(r)
			var done []OutputItem
			for _, c := range calls {
				if c.Status == "completed" {
					done = append(done, c)
				}
			}
			require.Len(t, done, len(out.Calls))
			for i, c := range done {
				require.Equal(t, out.Calls[i].Name, c.Name)
				require.Equal(t, out.Calls[i].Arguments, c.Arguments)
			}
			_, content := outputText(r)
			require.Equal(t, out.Content, content)
			switch {
			case out.Err != nil:
				require.Equal(t, "incomplete", r.Status, "a call that does not parse cannot pass as completed")
				require.Equal(t, finishMalformedCall, r.OutputError.Code)
				require.Equal(t, strings.TrimPrefix(out.Err.Error(), "chat: "), r.OutputError.Message, "the parser's error, without its package prefix")
			case engineFinish == "length":
				require.Equal(t, "incomplete", r.Status)
			default:
				require.Equal(t, "completed", r.Status)
				require.Nil(t, r.OutputError)
			}
			evs := streamResp(t, base, body)
			last := evs[len(evs)-1]
			require.Equal(t, r.Status, last.Response.Status)
			require.Equal(t, r.OutputError, last.Response.OutputError)
			require.Equal(t, callItems(*last.Response), checkCallEvents(t, evs))
			require.Equal(t, len(calls), len(callItems(*last.Response)))
		})
	}
}

// stalling emits the first tokens of a turn and then waits for the end of
// its context, as a generation the server's shutdown cuts.
type stalling struct {
	*scripted
}

func (m stalling) NewSession() Session { return &stallingSession{m: m.scripted} }

type stallingSession struct{ m *scripted }

func (s *stallingSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	res := engine.Result{PromptTokens: len(prompt)}
	for _, tok := range s.m.tokens {
		if err := emit(tok); err != nil {
			return res, err
		}
		res.Tokens++
	}
	<-ctx.Done()
	return res, ctx.Err()
}

func (s *stallingSession) Tokens() []int { return nil }
func (s *stallingSession) Usable() bool  { return false }

// TestResponsesToolsResume: a background response cut by a shutdown in
// the middle of a call's arguments resumes at the next start from its
// stored tokens and ends with the calls the whole turn has, their ids
// unchanged.
func TestResponsesToolsResume(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	toks := append(turnTokens(t, user, weatherCalls, weatherOptions()), chat.StopTokens(tok)[0])
	k := 0
	for !strings.Contains(tok.Decode(toks[:k]), `key="days"`) {
		k++
	}
	path := filepath.Join(t.TempDir(), store.FileName)
	serve := func(m Model) (*Server, string, func()) { return serveWithStore(t, m, path, nil) }
	s, base, stop := serve(stalling{newScripted(toks[:k]...)})
	r := createResp(t, base, respToolsBody(`"Weather in Paris?"`, `,"background":true`))
	require.Eventually(t, func() bool {
		q := s.Queue()
		return q.Running != nil && q.Running.ID == r.ID && q.Running.Tokens == k
	}, waitLong, pollEvery)
	stop()

	rest := newScripted(toks[k:]...)
	close(rest.proceed)
	_, base, stop = serve(rest)
	defer stop()
	for r.Status == "queued" || r.Status == "in_progress" {
		code, b := get(t, base+"/v1/responses/"+r.ID)
		require.Equal(t, http.StatusOK, code, string(b))
		r = decodeResponse(t, b)
	}
	require.Equal(t, "completed", r.Status)
	require.Equal(t, k, len(<-rest.started)-len(mustPrompt(t, user)), "resumed after the stored tokens")
	calls := callItems(r)
	require.Len(t, calls, 2)
	for i, c := range calls {
		require.Equal(t, chat.CallID(r.ID, i), c.CallID)
		require.Equal(t, "completed", c.Status)
	}
	requireJSONEqual(t, `{"city":"Paris","days":2}`, calls[0].Arguments)
	require.Equal(t, "city=Lyon", calls[1].Arguments)
	code, live := get(t, base+"/v1/responses/"+r.ID+"?stream=true")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, calls, checkCallEvents(t, parseNamed(t, string(live))))
}

func mustPrompt(t *testing.T, user []chat.Message) []int {
	t.Helper()
	_, tok := tiny(t)
	p, err := chat.Prompt(tok, user, weatherOptions())
	require.NoError(t, err)
	return p
}

// TestResponsesContentAndCalls: content before the calls stays a message
// item, ahead of the function_call items; a stop sequence matches the
// content only, and one in the content ends the answer there, with no
// calls.
func TestResponsesContentAndCalls(t *testing.T) {
	t.Parallel()
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	reply := weatherCalls
	reply.Content = "Checking Paris."
	prompts, _, base := scriptedTurn(t, user, reply, nil)
	for _, tc := range []struct {
		name, stop, content string
		types               []string
	}{
		{"no stop", "", "Checking Paris.", []string{"reasoning", "message", "function_call", "function_call"}},
		{"in the arguments only", "Lyon", "Checking Paris.", []string{"reasoning", "message", "function_call", "function_call"}},
		{"in the content", "Paris", "Checking ", []string{"reasoning", "message"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			extra := ""
			if tc.stop != "" {
				extra = fmt.Sprintf(`,"stop":[%q]`, tc.stop)
			}
			body := respToolsBody(`"Weather in Paris?"`, extra)
			r := createResp(t, base, body)
			<-prompts
			require.Equal(t, "completed", r.Status)
			var types []string
			for _, it := range r.Output {
				types = append(types, it.Type)
			}
			require.Equal(t, tc.types, types)
			require.Equal(t, tc.content, r.Output[1].Content[0].Text)

			evs := streamResp(t, base, body)
			<-prompts
			streamed := checkCallEvents(t, evs)
			require.Len(t, streamed, len(r.Output)-2)
			for i, c := range streamed {
				require.Equal(t, r.Output[2+i].Arguments, c.Arguments)
			}
			msgDone := -1
			for i, ev := range evs {
				if ev.Type == "response.output_item.done" && ev.Item.Type == "message" {
					msgDone = i
				}
				if ev.Type == "response.output_item.added" && ev.Item.Type == "function_call" {
					require.Positive(t, msgDone, "the message item ends before the first call starts")
				}
			}
			last := evs[len(evs)-1].Response
			require.Equal(t, tc.content, last.Output[1].Content[0].Text)
		})
	}
}

// TestResponsesToolChoicePrompt: every tool_choice renders the prompt a
// chat request with the same choice renders.
func TestResponsesToolChoicePrompt(t *testing.T) {
	t.Parallel()
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	prompts, _, base := scriptedTurn(t, user, weatherCalls, nil)
	_, tok := tiny(t)
	for _, tc := range []struct {
		choice string
		opts   func(*chat.Options)
	}{
		{`"auto"`, func(o *chat.Options) { o.ToolChoice = "auto" }},
		{`"none"`, func(o *chat.Options) { o.ToolChoice = "none" }},
		{`"required"`, func(o *chat.Options) { o.ToolChoice = "required" }},
		{`{"type":"function","name":"get_weather"}`, func(o *chat.Options) { o.ToolName = "get_weather" }},
	} {
		opts := weatherOptions()
		tc.opts(&opts)
		want, err := chat.Prompt(tok, user, opts)
		require.NoError(t, err)
		r := createResp(t, base, respToolsBody(`"Weather in Paris?"`, `,"tool_choice":`+tc.choice))
		require.Equal(t, want, <-prompts, tc.choice)
		require.JSONEq(t, tc.choice, string(r.ToolChoice))
	}
}

// TestResponsesCallCut: the length limit inside a call's arguments: the
// call was already streaming, so its item ends incomplete with the
// arguments so far, its raw text ends the message, and the response is
// incomplete (max_output_tokens) with output_error malformed_tool_call.
func TestResponsesCallCut(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	user := []chat.Message{{Role: "user", Content: "Weather in Paris?"}}
	toks := turnTokens(t, user, weatherCalls, weatherOptions())
	k := 0
	for !strings.Contains(tok.Decode(toks[:k]), `key="days"`) {
		k++
	}
	m := newScripted(toks...)
	close(m.proceed)
	_, base := startServerWith(t, m, nil)
	body := strings.Replace(respToolsBody(`"Weather in Paris?"`, ""), `"max_output_tokens":256`, fmt.Sprintf(`"max_output_tokens":%d`, k), 1)
	r := createResp(t, base, body)
	require.Equal(t, "incomplete", r.Status)
	require.Equal(t, "max_output_tokens", r.IncompleteDetails.Reason)
	require.Equal(t, finishMalformedCall, r.OutputError.Code)
	calls := callItems(r)
	require.Len(t, calls, 1)
	require.Equal(t, "incomplete", calls[0].Status)
	require.Equal(t, `{"city":"Paris"`, calls[0].Arguments)
	_, content := outputText(r)
	require.True(t, strings.HasPrefix(content, `<|open|>call tool="get_weather"`), content)
	evs := streamResp(t, base, body)
	require.Equal(t, "response.incomplete", evs[len(evs)-1].Type)
	require.Equal(t, calls[0].Arguments, checkCallEvents(t, evs)[0].Arguments)
}
