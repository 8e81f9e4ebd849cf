package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/deltafin/deltafin/app"
)

// plistValue is one value of a flat plist dict: its element name (string,
// true, false, integer, ...) and text.
type plistValue struct{ Kind, Text string }

// readPlist parses an XML property list whose root is one flat dict,
// rejecting anything else, so a malformed Info.plist fails `make test`
// on Linux before macOS tools see it.
func readPlist(data []byte) (map[string]plistValue, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	out := map[string]plistValue{}
	var path []string
	var key, text string
	var pendingKey bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("plist: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			path = append(path, t.Name.Local)
			text = ""
			switch len(path) {
			case 1:
				if t.Name.Local != "plist" {
					return nil, fmt.Errorf("plist: root element is <%s>", t.Name.Local)
				}
			case 2:
				if t.Name.Local != "dict" {
					return nil, fmt.Errorf("plist: top level is <%s>, not <dict>", t.Name.Local)
				}
			case 3:
				if t.Name.Local == "key" {
					if pendingKey {
						return nil, fmt.Errorf("plist: key %q has no value", key)
					}
				} else if !pendingKey {
					return nil, fmt.Errorf("plist: <%s> without a key", t.Name.Local)
				}
			default:
				return nil, fmt.Errorf("plist: nested <%s> under %s: this check reads flat dicts only", t.Name.Local, key)
			}
		case xml.CharData:
			text += string(t)
		case xml.EndElement:
			if len(path) == 3 {
				if t.Name.Local == "key" {
					key, pendingKey = strings.TrimSpace(text), true
					if _, dup := out[key]; dup {
						return nil, fmt.Errorf("plist: duplicate key %q", key)
					}
				} else {
					out[key] = plistValue{t.Name.Local, strings.TrimSpace(text)}
					pendingKey = false
				}
			}
			path = path[:len(path)-1]
		}
	}
	if pendingKey {
		return nil, fmt.Errorf("plist: key %q has no value", key)
	}
	return out, nil
}

func TestInfoPlist(t *testing.T) {
	data, err := os.ReadFile("Info.plist")
	require.NoError(t, err)
	p, err := readPlist(data)
	require.NoError(t, err)
	version := regexp.MustCompile(`^\d+(\.\d+){0,2}$`)
	for _, tc := range []struct {
		key, kind string
		ok        func(string) bool
	}{
		{"CFBundleIdentifier", "string", func(v string) bool { return v == app.BundleID }},
		{"CFBundleName", "string", func(v string) bool { return v != "" }},
		{"CFBundleExecutable", "string", func(v string) bool { return v == "Deltafin" }},
		{"CFBundlePackageType", "string", func(v string) bool { return v == "APPL" }},
		{"CFBundleInfoDictionaryVersion", "string", func(v string) bool { return v == "6.0" }},
		{"CFBundleShortVersionString", "string", version.MatchString},
		{"CFBundleVersion", "string", version.MatchString},
		{"LSMinimumSystemVersion", "string", version.MatchString},
		{"LSUIElement", "true", nil},
		{"NSHighResolutionCapable", "true", nil},
		{"NSHumanReadableCopyright", "string", func(v string) bool { return strings.Contains(v, "Deltafin") }},
	} {
		t.Run(tc.key, func(t *testing.T) {
			v, ok := p[tc.key]
			require.True(t, ok, "Info.plist lacks %s", tc.key)
			require.Equal(t, tc.kind, v.Kind, tc.key)
			if tc.ok != nil {
				require.True(t, tc.ok(v.Text), "%s = %q", tc.key, v.Text)
			}
		})
	}
	script, err := os.ReadFile("packaging/make-app.sh")
	require.NoError(t, err)
	require.Contains(t, string(script), `MacOS/`+p["CFBundleExecutable"].Text+`"`,
		"make-app.sh names the binary as CFBundleExecutable says")
}

func TestReadPlistRejects(t *testing.T) {
	head := `<?xml version="1.0" encoding="UTF-8"?><plist version="1.0">`
	for _, tc := range []struct{ name, doc, err string }{
		{"unclosed", head + `<dict><key>A</key><string>x</string>`, "plist: XML syntax error"},
		{"array root", head + `<array/></plist>`, "not <dict>"},
		{"key without value", head + `<dict><key>A</key></dict></plist>`, `key "A" has no value`},
		{"two keys", head + `<dict><key>A</key><key>B</key><true/></dict></plist>`, `key "A" has no value`},
		{"value without key", head + `<dict><true/></dict></plist>`, "without a key"},
		{"duplicate", head + `<dict><key>A</key><true/><key>A</key><false/></dict></plist>`, "duplicate key"},
		{"not a plist", `<html></html>`, "root element is <html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readPlist([]byte(tc.doc))
			require.ErrorContains(t, err, tc.err)
		})
	}
}
