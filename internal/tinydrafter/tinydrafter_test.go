package tinydrafter

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckedIn proves testdata/k3-tiny-eagle3 is what this generator
// writes (its PROVENANCE).
func TestCheckedIn(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "k3-tiny-eagle3")
	for name, want := range map[string][]byte{"config.json": []byte(Config), "model.safetensors": Checkpoint()} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's output (regenerate: go run ./internal/tinydrafter/gen testdata/k3-tiny-eagle3)", name)
		}
	}
}
