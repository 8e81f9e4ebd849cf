package main

import (
	"embed"
	"io/fs"
)

// demoFiles is the built-in demo model: the k3-tiny checkpoint (random
// weights, the real K3 layout, about 6 MB), served when nothing is
// installed so the API and the whole pipeline work on a fresh machine. It
// is embedded here because go:embed reaches only this directory's testdata.
//
//go:embed testdata/k3-tiny/config.json testdata/k3-tiny/generation_config.json
//go:embed testdata/k3-tiny/model-*.safetensors testdata/k3-tiny/model.safetensors.index.json
//go:embed testdata/k3-tiny/tiktoken.model testdata/k3-tiny/tokenizer_config.json
var demoFiles embed.FS

// demoModel is demoFiles with the model at its root.
func demoModel() (fs.FS, error) { return fs.Sub(demoFiles, "testdata/k3-tiny") }
