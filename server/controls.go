package server

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"

	"github.com/deltafin/deltafin/engine/chat"
)

// This file reads K3's thinking controls, the same on every endpoint, and
// the fields local front-ends send that this server accepts without
// acting on them.
//
// Thinking on or off, the effort and whether earlier turns' reasoning is
// kept can each be said in several places. The most specific wins:
//
//	on/off: thinking.type > chat_template_kwargs.thinking > reasoning_effort "none" > on
//	effort: thinking.effort > chat_template_kwargs.thinking_effort > reasoning_effort > max
//	keep:   thinking.keep "all" > chat_template_kwargs.preserve_thinking > keep all
//
// thinking (Moonshot's API) and chat_template_kwargs (vLLM, SGLang,
// llama-server) are K3's own names, set on purpose for this model;
// reasoning_effort is OpenAI's generic one, which clients often send on
// their own (Codex sends medium unless told otherwise). vLLM too lets
// chat_template_kwargs override what it derives from reasoning_effort.
// Only a contradiction inside one object (thinking disabled with an
// effort) is refused: across objects the order above settles it.

// ThinkingParam is Moonshot's thinking object.
type ThinkingParam struct {
	Type   *string         `json:"type"`   // enabled | disabled
	Keep   json.RawMessage `json:"keep"`   // "all" or null
	Effort *string         `json:"effort"` // as reasoning_effort
	// BudgetTokens is Anthropic's spelling, sent by clients that reuse
	// one thinking object for both APIs; K3 has no token budget.
	BudgetTokens *int `json:"budget_tokens"`
}

// thinkingControls are the settled controls.
type thinkingControls struct {
	thinking bool
	effort   string // low | high | max; "" = the renderer's default (max)
	forget   bool   // leave out earlier turns' reasoning
}

func (t thinkingControls) apply(o *chat.Options) {
	o.Thinking = t.thinking
	if t.effort != "" {
		o.Effort = t.effort
	}
	o.ForgetReasoning = t.forget
}

// effortField maps one effort name; param names the field for errors.
func effortField(param, name string) (effort string, on bool, e *apiError) {
	effort, on, err := chat.NearestEffort(name)
	if err != nil {
		return "", false, invalid(codeInvalidValue, param, "K3 supports none, minimal, low, medium (as high), high, xhigh (as max) or max, not %q", name)
	}
	return effort, on, nil
}

// checkThinking settles the controls from the thinking object, the
// chat_template_kwargs and reasoning_effort (param is where it was:
// "reasoning_effort" for chat, "reasoning.effort" for Responses).
func checkThinking(th *ThinkingParam, kwargs map[string]json.RawMessage, effort *string, param string) (thinkingControls, *apiError) {
	tc := thinkingControls{thinking: true}
	var onSet bool
	var effortSet bool
	if th != nil {
		if th.Type != nil {
			switch *th.Type {
			case "enabled", "adaptive":
				tc.thinking = true
			case "disabled":
				tc.thinking = false
			default:
				return tc, invalid(codeInvalidValue, "thinking.type", "must be \"enabled\" or \"disabled\", not %q", *th.Type)
			}
			onSet = true
		}
		if !isNull(th.Keep) {
			var keep string
			if json.Unmarshal(th.Keep, &keep) != nil || keep != "all" {
				return tc, invalid(codeInvalidValue, "thinking.keep", "must be \"all\" or null, not %s", truncate(string(th.Keep), 32))
			}
		}
		if th.Effort != nil {
			ef, on, e := effortField("thinking.effort", *th.Effort)
			if e != nil {
				return tc, e
			}
			if onSet && !tc.thinking && on {
				return tc, invalid(codeInvalidValue, "thinking.effort", "thinking.effort %q contradicts thinking.type \"disabled\"", *th.Effort)
			}
			if !onSet {
				tc.thinking, onSet = on, true
			}
			tc.effort, effortSet = ef, on
		}
	}
	keepSet := th != nil && !isNull(th.Keep)
	if len(kwargs) > 0 {
		keys := make([]string, 0, len(kwargs))
		for k := range kwargs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kwOn *bool
		var kwEffort string
		for _, k := range keys {
			raw := kwargs[k]
			p := "chat_template_kwargs." + k
			switch k {
			case "thinking", "enable_thinking", "preserve_thinking":
				var b bool
				if json.Unmarshal(raw, &b) != nil {
					return tc, invalid(codeInvalidValue, p, "must be true or false")
				}
				if k == "preserve_thinking" {
					if !keepSet {
						tc.forget = !b
					}
					continue
				}
				kwOn = &b
			case "thinking_effort", "reasoning_effort":
				var s string
				if json.Unmarshal(raw, &s) != nil {
					return tc, invalid(codeInvalidValue, p, "must be a string")
				}
				ef, on, e := effortField(p, s)
				if e != nil {
					return tc, e
				}
				if !on {
					return tc, invalid(codeInvalidValue, p, "an effort, not \"none\": switch thinking off with chat_template_kwargs.thinking=false")
				}
				kwEffort = ef
			default:
				return tc, invalid(codeUnknown, p, "unknown chat template argument %q; K3's are thinking, preserve_thinking and thinking_effort", k)
			}
		}
		if kwOn != nil && !*kwOn && kwEffort != "" {
			return tc, invalid(codeInvalidValue, "chat_template_kwargs.thinking_effort", "thinking_effort %q contradicts thinking=false", kwEffort)
		}
		if kwOn != nil && !onSet {
			tc.thinking, onSet = *kwOn, true
		}
		if kwEffort != "" && !effortSet {
			tc.effort, effortSet = kwEffort, true
		}
	}
	if effort != nil {
		ef, on, e := effortField(param, *effort)
		if e != nil {
			return tc, e
		}
		if !onSet {
			tc.thinking = on
		}
		if on && !effortSet {
			tc.effort = ef
		}
	}
	if !tc.thinking {
		tc.effort = ""
	}
	return tc, nil
}

// lenientFields are fields that local front-ends (Open WebUI, Ollama and
// LM Studio clients, Codex) send and that this server accepts without
// acting on them, unless the request type has a field of that name, which
// then honours it. Every one that arrives is named in the
// X-Deltafin-Ignored-Fields header of the response. Any other unknown
// field is still refused.
var lenientFields = []string{
	"top_k", "min_p", "typical_p", "repetition_penalty", "repeat_penalty", "repeat_last_n",
	"keep_alive", "options", "verbosity", "client_metadata", "cache_prompt", "n_probs",
}

// ignoredHeader is the response header that lists accepted, ignored fields.
const ignoredHeader = "X-Deltafin-Ignored-Fields"

// splitLenient removes from a JSON object body the lenient fields that the
// request type (a struct value) does not declare, and returns the body
// without them and their names, sorted. A body that is not an object is
// returned as is, for the strict decoder to explain.
func splitLenient(body []byte, req any) ([]byte, []string) {
	var obj map[string]json.RawMessage
	if kindOf(body) != '{' || json.Unmarshal(body, &obj) != nil {
		return body, nil
	}
	known := map[string]bool{}
	rt := reflect.TypeOf(req)
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
	var ignored []string
	for _, k := range lenientFields {
		if _, ok := obj[k]; ok && !known[k] {
			ignored = append(ignored, k)
			delete(obj, k)
		}
	}
	if len(ignored) == 0 {
		return body, nil
	}
	sort.Strings(ignored)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if enc.Encode(obj) != nil {
		return body, nil
	}
	return buf.Bytes(), ignored
}
