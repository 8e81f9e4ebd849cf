package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/chat"
)

// TestMessagesToolChoice: each of Anthropic's tool_choice types reaches
// K3's prompt as the template writes it: auto adds nothing, any the
// "required" instruction with the prompt ending in the tools block, tool
// the same ending inside the named tool's call tag, none the "none"
// instruction with the tools still declared.
func TestMessagesToolChoice(t *testing.T) {
	t.Parallel()
	_, tok := tiny(t)
	m := newScripted(tok.EncodeSpecial(chat.EndOfMsg)...)
	_, base := startServerWith(t, m, func(o *Options) { o.MemoEntries = 0 })
	tools := `"tools":[{"name":"get_weather","description":"Weather in a city","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}]`
	required := "The system is invoked with `tool_choice=required`."
	none := "The system is invoked with `tool_choice=none`."
	for _, c := range []struct {
		choice, suffix string
		has, hasNot    []string
	}{
		{`{"type":"auto"}`, chat.Open + "think" + chat.Sep, nil, []string{required, none}},
		{`{"type":"any"}`, chat.Open + "tools" + chat.Sep, []string{required}, []string{none}},
		{`{"type":"tool","name":"get_weather"}`, chat.Open + `call tool="get_weather" index="1"` + chat.Sep, []string{required}, []string{none}},
		{`{"type":"none"}`, chat.Open + "think" + chat.Sep, []string{none}, []string{required}},
	} {
		done := make(chan int, 1)
		go func() {
			code, _, body := post(t, base+"/v1/messages", `{"model":"m","max_tokens":16,`+tools+`,"tool_choice":`+c.choice+`,"messages":[{"role":"user","content":"Weather in Paris?"}]}`,
				"Content-Type", "application/json", "anthropic-version", "2023-06-01")
			if code != http.StatusOK {
				t.Errorf("%s: %d %s", c.choice, code, body)
			}
			done <- code
		}()
		prompt := tok.Decode(<-m.started)
		m.proceed <- struct{}{}
		<-done
		require.True(t, strings.HasSuffix(prompt, c.suffix), "%s: the prompt ends %q", c.choice, prompt[max(0, len(prompt)-80):])
		require.Contains(t, prompt, `"name":"get_weather"`, "%s: the tool is declared", c.choice)
		for _, s := range c.has {
			require.Contains(t, prompt, s, c.choice)
		}
		for _, s := range c.hasNot {
			require.NotContains(t, prompt, s, c.choice)
		}
	}
}
