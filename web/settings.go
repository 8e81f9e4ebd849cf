package web

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
)

func (w *Web) settings(c echo.Context) error {
	if w.opts.Control == nil {
		return problem(c, http.StatusNotImplemented, "no_app", "deltafin serve takes its settings from flags (deltafin serve --help)")
	}
	return c.JSON(http.StatusOK, w.opts.Control.Settings())
}

func (w *Web) saveSettings(c echo.Context) error {
	if w.opts.Control == nil {
		return problem(c, http.StatusNotImplemented, "no_app", "deltafin serve takes its settings from flags (deltafin serve --help)")
	}
	var s Settings
	if err := readJSON(c, 1<<20, &s, true); err != nil {
		return err
	}
	note, err := w.opts.Control.SaveSettings(s)
	if err != nil {
		return problem(c, http.StatusBadRequest, "settings", "%v", err)
	}
	return c.JSON(http.StatusOK, map[string]any{"settings": w.opts.Control.Settings(), "note": note})
}

// example is a ready snippet on /settings.
type example struct{ Name, Code string }

func examples(base, model string, key bool) []example {
	k := "deltafin"
	if key {
		k = "$DELTAFIN_API_KEY"
	}
	pyImport, pyKey, jsKey := "", `"deltafin"`, `"deltafin"`
	if key {
		pyImport, pyKey, jsKey = "import os\n", `os.environ["DELTAFIN_API_KEY"]`, "process.env.DELTAFIN_API_KEY"
	}
	return []example{
		{"curl", fmt.Sprintf(`curl %s/chat/completions \
  -H "Authorization: Bearer %s" -H "Content-Type: application/json" \
  -d '{"model": "%s", "messages": [{"role": "user", "content": "Hello"}]}'`, base, k, model)},
		{"Python (openai)", fmt.Sprintf(`%sfrom openai import OpenAI

client = OpenAI(base_url="%s", api_key=%s)
r = client.responses.create(model="%s", input="Hello")
print(r.output_text)`, pyImport, base, pyKey, model)},
		{"JavaScript (openai)", fmt.Sprintf(`import OpenAI from "openai";

const client = new OpenAI({ baseURL: "%s", apiKey: %s });
const r = await client.chat.completions.create({
  model: "%s",
  messages: [{ role: "user", content: "Hello" }],
});
console.log(r.choices[0].message.content);`, base, jsKey, model)},
	}
}
