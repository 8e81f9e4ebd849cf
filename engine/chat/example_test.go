package chat_test

import (
	"fmt"

	"github.com/deltafin/deltafin/engine/chat"
	"github.com/deltafin/deltafin/engine/tokenizer"
)

// A chat turn in and out: render and tokenize the conversation, then split
// the generated ids into reasoning and answer as they stream.
func Example() {
	tok, err := tokenizer.Load("../../testdata/tokenizer")
	if err != nil {
		panic(err)
	}
	opts := chat.DefaultOptions()
	prompt, err := chat.Prompt(tok, []chat.Message{{Role: "user", Content: "2+2?"}}, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(prompt) > 0, chat.StopTokens(tok))

	// What a model might generate (the stop token is not emitted).
	generated := tok.EncodeSpecial("Add.<|close|>think<|sep|><|open|>response<|sep|>4<|close|>response<|sep|><|close|>message<|sep|>")
	p := chat.NewTokenParser(tok, opts)
	for _, id := range generated {
		p.Add(id)
	}
	p.Finish(false)
	reasoning, content := p.Result()
	fmt.Printf("reasoning=%q content=%q\n", reasoning, content)
	// Output:
	// true [770 769]
	// reasoning="Add." content="4"
}
