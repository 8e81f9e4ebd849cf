package server

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/engine"
	"github.com/deltafin/deltafin/tokenizer"
)

// agentK3 stands in for K3's weights where the agents' tool loop needs
// output that depends on the conversation, which random tiny weights
// cannot give: it reads the rendered prompt (the real renderer's output,
// decoded) and writes what K3 would, in K3's own output format, as tokens
// for the real parser. Before the tool has run it calls the agent's shell
// tool with `echo hello-from-tool`; once a tool result holds the echo's
// output it answers with that output; a request without the shell tool
// (a title, a summary) gets a short plain answer. Everything else (HTTP,
// the agents, rendering, parsing) is real.
type agentK3 struct {
	tok  *tokenizer.Tokenizer
	tool string // the shell tool's name
	args string // its arguments, as K3's typed argument blocks
	info engine.Info

	mu      sync.Mutex
	prompts []string // every prompt seen, decoded, for failure messages
}

// toolOutput is what the scripted command prints, and answerPrefix starts
// the scripted answer that quotes it.
const (
	toolOutput   = "hello-from-tool"
	answerPrefix = "The tool printed: "
)

// xtmlArg is one typed string argument as K3 writes it.
func xtmlArg(key, value string) string {
	return chat.Open + `argument key="` + key + `" type="string"` + chat.Sep + value + chat.Close + "argument" + chat.Sep
}

func newAgentK3(tok *tokenizer.Tokenizer, tool, args string) *agentK3 {
	return &agentK3{tok: tok, tool: tool, args: args,
		info: engine.Info{ID: tinyID, VocabSize: tok.VocabSize(), ContextLen: 1 << 24}}
}

func (m *agentK3) Info() engine.Info   { return m.info }
func (m *agentK3) NewSession() Session { return &agentSession{m: m} }

// toolResultRE finds a rendered tool result's text.
var toolResultRE = regexp.MustCompile(regexp.QuoteMeta(chat.Open+`message role="tool"`) + `[^<]*` + regexp.QuoteMeta(chat.Sep) + `((?s:.*?))` + regexp.QuoteMeta(chat.Close+"message"))

// reply is the K3 output for a rendered conversation.
func (m *agentK3) reply(text string) string {
	var out strings.Builder
	if strings.HasSuffix(text, chat.Open+"think"+chat.Sep) {
		out.WriteString("The user wants the shell tool run." + chat.Close + "think" + chat.Sep + chat.Open + "response" + chat.Sep)
	}
	ran := false
	for _, r := range toolResultRE.FindAllStringSubmatch(text, -1) {
		ran = ran || strings.Contains(r[1], toolOutput)
	}
	declared := regexp.MustCompile(`"name":\s*"` + regexp.QuoteMeta(m.tool) + `"`).MatchString(text)
	switch {
	case ran:
		out.WriteString(answerPrefix + toolOutput + chat.Close + "response" + chat.Sep)
	case declared:
		out.WriteString(chat.Close + "response" + chat.Sep + chat.Open + "tools" + chat.Sep +
			chat.Open + `call tool="` + m.tool + `" index="1"` + chat.Sep + m.args + chat.Close + "call" + chat.Sep +
			chat.Close + "tools" + chat.Sep)
	default:
		out.WriteString("Shell tool check" + chat.Close + "response" + chat.Sep)
	}
	out.WriteString(chat.Close + "message" + chat.Sep + chat.EndOfMsg)
	return out.String()
}

type agentSession struct {
	m    *agentK3
	hist []int
}

func (s *agentSession) Generate(ctx context.Context, prompt []int, opts engine.GenerateOptions, emit func(int) error) (engine.Result, error) {
	s.hist = append(s.hist, prompt...)
	text := s.m.tok.Decode(s.hist)
	s.m.mu.Lock()
	s.m.prompts = append(s.m.prompts, text)
	s.m.mu.Unlock()
	res := engine.Result{PromptTokens: len(prompt), FinishReason: "length"}
	for _, tok := range s.m.tok.EncodeSpecial(s.m.reply(text)) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if res.Tokens == opts.MaxNew {
			return res, nil
		}
		s.hist = append(s.hist, tok)
		if slices.Contains(opts.StopTokens, tok) {
			res.FinishReason = "stop"
			return res, nil
		}
		if err := emit(tok); errors.Is(err, engine.ErrStopped) {
			res.FinishReason = "stop"
			return res, nil
		} else if err != nil {
			return res, err
		}
		res.Tokens++
	}
	return res, nil
}

func (s *agentSession) Tokens() []int { return slices.Clone(s.hist) }
func (s *agentSession) Usable() bool  { return true }
