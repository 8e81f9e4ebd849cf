package server

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Invalid UTF-8 bytes and lone surrogate escapes in any text field are
// refused with a 400 naming the field; encoding/json would turn them into
// U+FFFD and the model would answer a prompt nobody sent.
func TestBadTextRefused(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	chat := func(msgs, extra string) string {
		return `{"model":"` + tinyID + `","max_tokens":2,"messages":` + msgs + extra + `}`
	}
	user := `[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ name, path, body, param string }{
		{"raw byte in content", "/v1/chat/completions", chat("[{\"role\":\"user\",\"content\":\"a\xffb\"}]", ""), "messages[0].content"},
		{"truncated sequence", "/v1/chat/completions", chat("[{\"role\":\"user\",\"content\":\"\xe2\x82\"}]", ""), "messages[0].content"},
		{"lone high surrogate", "/v1/chat/completions", chat(`[{"role":"user","content":"x\ud800y"}]`, ""), "messages[0].content"},
		{"lone low surrogate", "/v1/chat/completions", chat(`[{"role":"system","content":"ok"},{"role":"user","content":[{"type":"text","text":"\udc00"}]}]`, ""), "messages[1].content[0].text"},
		{"high then not low", "/v1/chat/completions", chat(`[{"role":"user","content":"\ud800\u0041"}]`, ""), "messages[0].content"},
		{"stop", "/v1/chat/completions", chat(user, `,"stop":["ok","\ud83d"]`), "stop[1]"},
		{"tools", "/v1/chat/completions", chat(user, ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"\xc0\xaf\"}}]"), "tools[0].function.description"},
		{"completion prompt", "/v1/completions", `{"model":"` + tinyID + "\",\"prompt\":\"\xed\xa0\x80\"}", "prompt"},
		{"instructions", "/v1/responses", `{"model":"` + tinyID + `","input":"hi","instructions":"\udfff"}`, "instructions"},
		{"responses input", "/v1/responses", `{"model":"` + tinyID + "\",\"input\":[{\"role\":\"user\",\"content\":\"\xff\"}]}", "input[0].content"},
	} {
		code, _, b := post(t, base+tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %s", tc.name, b)
		e := decodeError(t, b)
		require.NotNil(t, e.Param, "%s: %s", tc.name, b)
		require.Equal(t, tc.param, *e.Param, "%s: %s", tc.name, b)
		require.Contains(t, e.Message, "U+FFFD", tc.name)
	}
	// Valid text passes: a surrogate pair, raw multi-byte UTF-8.
	code, _, b := post(t, base+"/v1/chat/completions", chat(`[{"role":"user","content":"\ud83d\ude00 é 日本"}]`, ""))
	require.Equal(t, http.StatusOK, code, string(b))
}

func TestCheckText(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`{}`, `[]`, `{"a":[1,true,null,"\u00e9\ud83d\ude00"]}`, `"\\ud800"`, "not json \xff"} {
		require.NoError(t, CheckText([]byte(ok)), ok)
	}
	err := CheckText([]byte("{\"a\":{\"b\xff\":1}}"))
	require.ErrorIs(t, err, ErrBadText)
	require.Equal(t, "a", err.(*TextError).Path, "a bad key is named by its object")
}
