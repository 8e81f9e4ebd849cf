package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStopText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stops  []string
		pieces []string
		sent   string
		hit    bool
	}{
		{"none", nil, []string{"a", "b"}, "ab", false},
		{"inside one piece", []string{"STOP"}, []string{"abSTOPcd", "ef"}, "ab", true},
		{"split over pieces", []string{"STOP"}, []string{"ab S", "T", "OP cd"}, "ab ", true},
		{"false start released", []string{"STOP"}, []string{"ab ST", "ARt"}, "ab STARt", false},
		{"earliest of several", []string{"zz", "b"}, []string{"a", "bzz"}, "a", true},
		{"prefix at the very end", []string{"STOP"}, []string{"x", "ST"}, "xST", false},
		{"multibyte", []string{"é!"}, []string{"café", "!"}, "caf", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := stopText{stops: tc.stops}
			var sent strings.Builder
			hit := false
			for _, p := range tc.pieces {
				out, h := st.push(p)
				for _, s := range tc.stops {
					require.NotContains(t, sent.String()+out, s, "a stop sequence was sent")
				}
				sent.WriteString(out)
				if hit = h; hit {
					break
				}
			}
			if !hit {
				sent.WriteString(st.flush())
			}
			require.Equal(t, tc.sent, sent.String())
			require.Equal(t, tc.hit, hit)
		})
	}
}

func TestStopValidation(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	for _, tc := range []struct{ stop, param string }{
		{`["a","b","c","d","e"]`, "stop"},
		{`["a",""]`, "stop[1]"},
		{`3`, "stop"},
	} {
		code, _, body := post(t, base+"/v1/completions", fmt.Sprintf(`{"model":%q,"temperature":0,"prompt":"x","stop":%s}`, tinyID, tc.stop))
		require.Equal(t, http.StatusBadRequest, code, string(body))
		require.Equal(t, tc.param, *decodeError(t, body).Param)
	}
}

// TestStopSequences: on k3-tiny a stop sequence taken from the middle of
// the greedy answer cuts it there, streamed or not, chat or completion,
// with finish_reason "stop" and the stop string never sent.
func TestStopSequences(t *testing.T) {
	t.Parallel()
	_, base := startServer(t, nil)
	ids := []int{5, 6, 7, 8}
	want, _ := direct(t, ids, 40, nil)
	_, tok := tiny(t)
	full := tok.Decode(want)
	// A stop sequence whose first occurrence is well inside the text.
	at := len(full) / 2
	stop := full[at : at+3]
	at = strings.Index(full, stop)
	require.Greater(t, at, 0)

	t.Run("completion", func(t *testing.T) {
		body := fmt.Sprintf(`{"model":%q,"temperature":0,"prompt":%s,"max_tokens":40,"stop":[%q,"never-in-gibberish-%s"]}`, tinyID, compact(t, ids), stop, "x")
		code, _, b := post(t, base+"/v1/completions", body)
		require.Equal(t, http.StatusOK, code, string(b))
		var c Completion
		require.NoError(t, json.Unmarshal(b, &c))
		require.Equal(t, full[:at], c.Choices[0].Text)
		require.Equal(t, "stop", *c.Choices[0].FinishReason)

		resp, next := stream(t, t.Context(), base+"/v1/completions", body[:len(body)-1]+`,"stream":true}`)
		defer resp.Body.Close()
		data, _ := readAll(t, next)
		var text, finish string
		for _, d := range data[:len(data)-1] {
			var c Completion
			require.NoError(t, json.Unmarshal([]byte(d), &c))
			require.NotContains(t, text+c.Choices[0].Text, stop)
			text += c.Choices[0].Text
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		require.Equal(t, full[:at], text)
		require.Equal(t, "stop", finish)
	})

	t.Run("chat", func(t *testing.T) {
		req := fmt.Sprintf(`{"model":%q,"temperature":0,"messages":[{"role":"user","content":"hi"}],"reasoning_effort":"none","max_tokens":40%%s}`, tinyID)
		code, _, b := post(t, base+"/v1/chat/completions", fmt.Sprintf(req, ""))
		require.Equal(t, http.StatusOK, code, string(b))
		var plain ChatCompletion
		require.NoError(t, json.Unmarshal(b, &plain))
		answer := plain.Choices[0].Message.Content
		require.Greater(t, len(answer), 8, "the tiny model answers something")
		stop := answer[len(answer)/2 : len(answer)/2+2]
		cut := answer[:strings.Index(answer, stop)]

		code, _, b = post(t, base+"/v1/chat/completions", fmt.Sprintf(req, fmt.Sprintf(`,"stop":%q`, stop)))
		require.Equal(t, http.StatusOK, code, string(b))
		var got ChatCompletion
		require.NoError(t, json.Unmarshal(b, &got))
		require.Equal(t, cut, got.Choices[0].Message.Content)
		require.Equal(t, "stop", got.Choices[0].FinishReason)

		resp, next := stream(t, t.Context(), base+"/v1/chat/completions", fmt.Sprintf(req, fmt.Sprintf(`,"stop":%q,"stream":true`, stop)))
		defer resp.Body.Close()
		data, _ := readAll(t, next)
		var content, finish string
		for _, d := range data[:len(data)-1] {
			var c ChatChunk
			require.NoError(t, json.Unmarshal([]byte(d), &c))
			if x := c.Choices[0].Delta.Content; x != nil {
				content += *x
			}
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		require.Equal(t, cut, content)
		require.Equal(t, "stop", finish)
	})
}
