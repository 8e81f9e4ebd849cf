package web

// Control is what the page asks of the menu-bar app: the same state the
// menu shows and the same actions its entries take (package app implements
// it), so a button here and an entry there cannot disagree.
type Control interface {
	// Status is the install, download and warming state now.
	Status() AppStatus
	// Act does what a menu entry does: ActPause, ActResume, ActUpgrade,
	// ActWarmOn, ActWarmOff.
	Act(action string) error
	// Settings are the app's settings as saved; SaveSettings validates,
	// saves and applies them (what cannot apply at once restarts the
	// server, which loses no answer), and says what happened.
	Settings() Settings
	SaveSettings(Settings) (note string, err error)
}

// The actions of the /model page's buttons.
const (
	ActPause   = "pause"
	ActResume  = "resume"
	ActUpgrade = "upgrade"
	ActWarmOn  = "warm-on"
	ActWarmOff = "warm-off"
)

// AppStatus is the app's state as /model shows it.
type AppStatus struct {
	Line    string `json:"line"`    // the menu's status line
	Install string `json:"install"` // "none" | "stream" | "full"
	// Verification is "verified", or "unverified" when bytes on disk
	// could not be checked against the hub.
	Verification string `json:"verification"`
	// ExpertsOnDisk of ExpertsTotal routed experts are present.
	ExpertsOnDisk int      `json:"experts_on_disk"`
	ExpertsTotal  int      `json:"experts_total"`
	Downloading   bool     `json:"downloading"`
	Paused        bool     `json:"paused"`
	Download      Progress `json:"download"`
	WarmEnabled   bool     `json:"warm_enabled"`
	Warming       bool     `json:"warming"`
	Warm          Progress `json:"warm"`
	WarmNote      string   `json:"warm_note"`
	// What the buttons may do now (the menu's enabled entries).
	CanPause, CanResume, CanUpgrade, CanWarm bool
}

// Progress is a download's or warming's bytes and rate.
type Progress struct {
	Done  int64   `json:"done"`
	Total int64   `json:"total"`
	Rate  float64 `json:"rate"` // bytes per second
}

// Settings are the app's settings the page edits.
type Settings struct {
	Port               int      `json:"port"`
	APIKey             string   `json:"api_key"`
	CORSOrigins        []string `json:"cors_origins"`
	Queue              int      `json:"queue"`
	WarmOvernight      bool     `json:"warm_overnight"`
	WarmIdleMinutes    float64  `json:"warm_idle_minutes"`
	NotifyAfterSeconds float64  `json:"notify_after_seconds"`
}

// Flag is one setting deltafin serve runs with, as /settings lists it:
// serve takes its settings from its flags, so the page shows them and
// changes none. A secret is never a Value (the API key reads "set").
type Flag struct{ Name, Value string }
