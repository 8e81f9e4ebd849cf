package app

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The parsers behind the macOS seams, tested everywhere: the darwin files
// only run the commands whose output these read.

func TestParseHIDIdleTime(t *testing.T) {
	const ioreg = `+-o Root  <class IORegistryEntry, id 0x100000100, retain 27>
  +-o IOHIDSystem  <class IOHIDSystem, id 0x100000370, registered, matched, active, busy 0 (0 ms), retain 21>
    | {
    |   "HIDIdleTime" = 93458123456
    |   "HIDParameters" = {"HIDClickTime"=500000000}
    | }
`
	for _, tc := range []struct {
		name, out string
		want      time.Duration
		err       bool
	}{
		{"ioreg", ioreg, 93458123456, false},
		{"zero", `"HIDIdleTime" = 0`, 0, false},
		{"missing", "+-o Root\n", 0, true},
		{"garbage", `"HIDIdleTime" = <data>`, 0, true},
		{"negative", `"HIDIdleTime" = -5`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHIDIdleTime([]byte(tc.out))
			if tc.err {
				require.ErrorIs(t, err, ErrIdleUnknown)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParsePmset(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		ac, err   bool
	}{
		{"ac", "Now drawing from 'AC Power'\n -InternalBattery-0 (id=4653155)\t100%; charged; 0:00 remaining present: true\n", true, false},
		{"battery", "Now drawing from 'Battery Power'\n -InternalBattery-0 (id=4653155)\t87%; discharging; 5:12 remaining present: true\n", false, false},
		{"ups", "Now drawing from 'UPS Power'\n", false, false},
		{"desktop", "Now drawing from 'AC Power'\n", true, false},
		{"unknown", "pmset: error\n", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ac, err := parsePmset(tc.out)
			if tc.err {
				require.ErrorIs(t, err, ErrPowerUnknown)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.ac, ac)
		})
	}
}

func TestDesktopQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/usr/bin/deltafin", "/usr/bin/deltafin"},
		{"/opt/my app/deltafin", `"/opt/my app/deltafin"`},
		{`/opt/a"b$c\d%e`, `"/opt/a\\"b\\$c\\\\d%%e"`},
	} {
		t.Run(tc.in, func(t *testing.T) { require.Equal(t, tc.want, desktopQuote(tc.in)) })
	}
}
