package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServeFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		code int
		err  string
	}{
		{"bad port", nil, []string{"--data-dir", "DIR", "--port", "99999", "--model", "x"}, 2, "want a port number 0..65535"},
		{"bad env", map[string]string{"DELTAFIN_SERVER_MAX_TOKENS": "x"}, []string{"--data-dir", "DIR"}, 1, "DELTAFIN_SERVER_MAX_TOKENS"},
		{"bad model dir", nil, []string{"--data-dir", "DIR", "--port", "0", "--model", "DIR", "--cors-origin", "https://a.example,https://b.example"}, 1, "has no config.json"},
		{"unknown flag", nil, []string{"--temperature", "1"}, 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"serve"}
			for _, a := range tc.args {
				if a == "DIR" {
					a = dir
				}
				args = append(args, a)
			}
			code, _, errOut := runArgs(t, tc.env, args...)
			require.Equal(t, tc.code, code, errOut)
			require.Contains(t, errOut, tc.err)
		})
	}
}
