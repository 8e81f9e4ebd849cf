package app

import (
	"testing"
	"time"

	"github.com/deltafin/deltafin/downloader"
	"github.com/stretchr/testify/require"
)

func TestBuildMenu(t *testing.T) {
	can := State{CanDownload: true, CanWarm: true, CanServe: true}
	with := func(f func(*State)) State { s := can; f(&s); return s }
	for _, tc := range []struct {
		name    string
		st      State
		status  string
		title   string
		visible []ItemID
		hidden  []ItemID
		check   func(t *testing.T, m Menu)
	}{
		{name: "nothing installed", st: can, status: "Not installed",
			visible: []ItemID{ItemDownloadStream, ItemDownloadFull}, hidden: []ItemID{ItemPause, ItemUpgrade},
			check: func(t *testing.T, m Menu) {
				require.False(t, m.Item(ItemWarm).Enabled, "nothing to warm without a stream install")
				require.False(t, m.Item(ItemCopyAddress).Enabled)
				require.False(t, m.Item(ItemOpenWeb).Enabled, "no page while the server is stopped")
				require.Equal(t, LabelStartServer, m.Item(ItemServer).Label)
			}},
		{name: "downloading", st: with(func(s *State) {
			s.Downloading, s.Pending = true, ModeStream
			s.Download = Progress{Done: 41, Total: 100, Rate: 1.2e9, ETA: 3 * time.Hour}
		}), status: "Downloading 41% · 1.2 GB/s · 3 h left", title: "↓ 41%",
			visible: []ItemID{ItemPause}, hidden: []ItemID{ItemDownloadStream, ItemDownloadFull, ItemUpgrade},
			check: func(t *testing.T, m Menu) { require.Equal(t, LabelPause, m.Item(ItemPause).Label) }},
		{name: "answering with one queued", st: with(func(s *State) {
			s.Install, s.ServerAddr = InstallState{Mode: InstallFull}, "http://127.0.0.1:8000"
			s.Answering = Answering{Running: true, Queued: 1, PromptDone: 40, PromptTokens: 100, ETA: 3 * time.Minute}
		}), status: "Full install · serving http://127.0.0.1:8000 · Answering… · reading the prompt 40% · at most 3 min left · 1 waiting, 1 ahead", title: "answering…"},
		{name: "answering, decoding", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallFull}
			s.Answering = Answering{Running: true, PromptDone: 100, PromptTokens: 100, Tokens: 12}
		}), status: "Full install · Answering… · 12 tokens", title: "answering…"},
		{name: "answering, thinking, one waiting", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallFull}
			s.Answering = Answering{Running: true, Queued: 1, Tokens: 120, Thinking: true, ThinkingTokens: 120, Title: "Why is the sky blue?"}
		}), status: "Full install · Answering… “Why is the sky blue?” · thinking… 120 tokens · 1 waiting, 1 ahead", title: "answering…"},
		{name: "answering by its first words, three waiting", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallFull}
			s.Answering = Answering{Running: true, Queued: 3, Tokens: 5, Title: "Why is the sky blue?"}
		}), status: "Full install · Answering… “Why is the sky blue?” · 5 tokens · 3 waiting, the last 3 ahead", title: "answering…"},
		{name: "waiting for the hub", st: with(func(s *State) {
			s.Downloading, s.Pending = true, ModeStream
			s.Download = Progress{Done: 41, Total: 100, ETA: 3 * time.Hour, Waiting: downloader.WaitMessage(30*time.Second, true)}
		}), status: "Downloading 41% · waiting for the hub (rate limited), retrying in 30 s", title: "↓ 41%"},
		{name: "paused after relaunch", st: with(func(s *State) {
			s.Pending = ModeFull
		}), status: "Download paused at 0% (full)",
			visible: []ItemID{ItemPause}, hidden: []ItemID{ItemDownloadStream, ItemUpgrade},
			check: func(t *testing.T, m Menu) { require.Equal(t, LabelResume, m.Item(ItemPause).Label) }},
		{name: "stream install serving", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallStream, ExpertsCached: 12, ExpertsTotal: 100}
			s.ServerAddr = "http://127.0.0.1:8000"
		}), status: "Stream install, 12% of experts cached · serving http://127.0.0.1:8000",
			visible: []ItemID{ItemUpgrade}, hidden: []ItemID{ItemDownloadStream, ItemPause},
			check: func(t *testing.T, m Menu) {
				require.True(t, m.Item(ItemWarm).Enabled)
				require.True(t, m.Item(ItemCopyAddress).Enabled)
				require.True(t, m.Item(ItemOpenWeb).Enabled)
				require.Equal(t, LabelOpenWeb, m.Item(ItemOpenWeb).Label)
				require.Equal(t, LabelStopServer, m.Item(ItemServer).Label)
			}},
		{name: "stream install not all verified", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallStream, ExpertsCached: 12, ExpertsTotal: 100, Spine: "spine 100% present, 62% verified"}
		}), status: "Stream install, 12% of experts cached · spine 100% present, 62% verified"},
		{name: "stream install unverified", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallStream, ExpertsCached: 12, ExpertsTotal: 100, Spine: "spine 100% present, 0% verified", Unverified: true}
		}), status: "Stream install, 12% of experts cached · unverified · spine 100% present, 0% verified"},
		{name: "upgrading", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallStream, ExpertsCached: 1, ExpertsTotal: 2}
			s.Downloading, s.Pending, s.Upgrade = true, ModeFull, true
			s.Download = Progress{Done: 1, Total: 2, ETA: 5 * time.Minute}
		}), status: "Upgrading 50% · 5 min left", title: "↓ 50%", hidden: []ItemID{ItemUpgrade}},
		{name: "warming", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallStream, ExpertsCached: 50, ExpertsTotal: 100}
			s.WarmEnabled, s.Warming, s.Warm = true, true, Progress{Done: 3, Total: 4}
		}), status: "Stream install, 50% of experts cached · warming 75%", title: "warming 75%",
			check: func(t *testing.T, m Menu) { require.True(t, m.Item(ItemWarm).Checked) }},
		{name: "warming waits", st: with(func(s *State) {
			s.Install = InstallState{Mode: InstallStream, ExpertsTotal: 100}
			s.WarmEnabled, s.WarmNote = true, "warming waits for AC power"
		}), status: "Stream install, 0% of experts cached · warming waits for AC power"},
		{name: "full install demo off", st: with(func(s *State) { s.Install.Mode = InstallFull }), status: "Full install",
			hidden: []ItemID{ItemDownloadStream, ItemUpgrade, ItemPause}},
		{name: "demo", st: with(func(s *State) { s.Demo, s.ServerAddr = true, "http://x" }),
			status: "Not installed · demo model: random weights · serving http://x"},
		{name: "problem", st: with(func(s *State) { s.Problem = "Download failed: free 132 GB more for stream mode" }),
			status: "Download failed: free 132 GB more for stream mode"},
		{name: "no downloader", st: State{}, status: "Not installed", check: func(t *testing.T, m Menu) {
			require.False(t, m.Item(ItemDownloadStream).Enabled)
			require.False(t, m.Item(ItemServer).Enabled)
			require.True(t, m.Item(ItemQuit).Enabled)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := BuildMenu(tc.st)
			require.Len(t, m.Items, int(numItems))
			for i, it := range m.Items {
				require.Equal(t, ItemID(i), it.ID)
			}
			require.Equal(t, tc.status, m.Item(ItemStatus).Label)
			require.False(t, m.Item(ItemStatus).Enabled, "the status line is not a button")
			require.Equal(t, tc.title, m.Title)
			for _, id := range tc.visible {
				require.True(t, m.Item(id).Visible, "item %d", id)
				require.True(t, m.Item(id).Enabled, "item %d", id)
			}
			for _, id := range tc.hidden {
				require.False(t, m.Item(id).Visible, "item %d", id)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

func TestFormatETA(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{40 * time.Second, "40 s"}, {89 * time.Second, "89 s"}, {2 * time.Minute, "2 min"},
		{89 * time.Minute, "89 min"}, {3*time.Hour + 10*time.Minute, "3 h"}, {100 * time.Minute, "2 h"},
	} {
		t.Run(tc.want, func(t *testing.T) { require.Equal(t, tc.want, formatETA(tc.d)) })
	}
}

func TestFirstWords(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Paris.", "Paris."},
		{"  one\ntwo  three ", "one two three"},
		{"a b c d e f g h i j k l m n", "a b c d e f g h i j k l…"},
		{"ééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé", "éééééééééééééééééééééééééééééééééééééééééééééééééééééééééééé…"},
	} {
		t.Run(tc.want, func(t *testing.T) { require.Equal(t, tc.want, firstWords(tc.in, 12, 120)) })
	}
}
