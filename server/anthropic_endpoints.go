package server

import (
	"net/http"

	"github.com/deltafin/deltafin/chat"
	"github.com/labstack/echo/v4"
)

// The Messages API's endpoints. A message is a chat generation: the same
// validation into a genRequest, the same K3 prompt, memo, conversation
// reuse, queue, cancellation and shutdown as /v1/chat/completions
// (answer), only its output is Anthropic's. Headers Anthropic's clients
// send (anthropic-version, anthropic-beta) are accepted and need nothing:
// the wire format served is the 2023-06-01 version's.

// messages is POST /v1/messages.
func (s *Server) messages(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	r, ae := decodeMessages(body, limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize}, false)
	if ae != nil {
		return ae
	}
	j, ae := s.plan(r.g)
	if ae != nil {
		return ae
	}
	j.samp.report(c.Response().Header())
	o := &msgOutput{r: r, model: s.meta.id, id: newID("msg_"), prompt: len(j.prompt), stop: stopText{stops: r.g.stop}}
	o.parser = chat.NewTokenParserWith(s.tok, chatOptions(r.g), r.g.parseOptions(o.id))
	defer o.close()
	c.Response().Header().Set("Request-Id", o.id)
	return s.answer(c, j, o, "message", chatTitle(r.g))
}

// countTokens is POST /v1/messages/count_tokens: the prompt's length in
// tokens, as the model would read it.
func (s *Server) countTokens(c echo.Context) error {
	body, err := s.readBody(c)
	if err != nil {
		return err
	}
	r, ae := decodeMessages(body, limits{modelID: s.meta.id, vocabSize: s.meta.vocabSize}, true)
	if ae != nil {
		return ae
	}
	segs, err := chat.Render(chatMessages(r.g.messages), chatOptions(r.g))
	if err != nil {
		return invalid(codeInvalidValue, "messages", "%v", err)
	}
	return c.JSON(http.StatusOK, TokenCount{InputTokens: len(chat.Tokenize(s.tok, segs))})
}
