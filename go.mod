module github.com/deltafin/deltafin

go 1.26.0

require github.com/stretchr/testify v1.12.1

require (
	github.com/adrg/xdg v0.5.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.50.0
)
