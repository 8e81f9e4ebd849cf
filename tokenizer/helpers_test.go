package tokenizer

import (
	"encoding/base64"
	"strconv"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
func itoa(i int) string   { return strconv.Itoa(i) }
