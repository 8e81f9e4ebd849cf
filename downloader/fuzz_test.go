package downloader

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltafin/deltafin/checkpoint"
)

// FuzzReadTrace: any input gives routings or an error, never a panic.
func FuzzReadTrace(f *testing.F) {
	f.Add(`{"token":0,"layer":1,"experts":[3,4]}` + "\n")
	f.Add(`{"token":0,"layer":-1,"experts":[3]}`)
	f.Add(`{"layer":1,"expert":2,"heat":0.5}`)
	f.Add("\n\n{")
	f.Fuzz(func(t *testing.T, in string) {
		counts := map[checkpoint.ExpertID]float64{}
		n, err := ReadTrace(strings.NewReader(in), "fuzz", counts)
		if err == nil && n < 0 {
			t.Fatalf("negative routings %d", n)
		}
		for id := range counts {
			if id.Layer < 0 || id.Expert < 0 {
				t.Fatalf("negative id %v accepted", id)
			}
		}
		_ = ReadHeat(strings.NewReader(in), "fuzz", map[checkpoint.ExpertID]float64{})
	})
}

// FuzzLoadPresence: a damaged presence map is discarded, never trusted
// beyond the file's size.
func FuzzLoadPresence(f *testing.F) {
	f.Add(`{"version":1,"size":100,"ranges":[[0,10],[20,30]]}`, int64(100))
	f.Add(`{"version":1,"size":100,"ranges":[[0,200]]}`, int64(100))
	f.Add(`{"version":1,"size":100,"ranges":[[10,5]]}`, int64(100))
	f.Add(`null`, int64(0))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in string, size int64) {
		if size < 0 {
			return
		}
		path := filepath.Join(dir, "p.json")
		if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := loadPresence(path, size)
		if err != nil {
			t.Fatal(err)
		}
		if p.Size != size || !p.Ranges.valid(size) {
			t.Fatalf("accepted %+v for a %d-byte file", p, size)
		}
	})
}
