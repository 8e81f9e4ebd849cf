package chat_test

import (
	"fmt"
	"strings"

	"github.com/deltafin/deltafin/chat"
	"github.com/deltafin/deltafin/tokenizer"
)

// A chat turn in and out: render and tokenize the conversation, then split
// the generated ids into reasoning and answer as they stream.
func Example() {
	tok, err := tokenizer.Load("../testdata/tokenizer")
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

// Tool calls as events, for a streaming consumer such as the Responses
// API: CallStart opens a function_call item, each CallArguments fragment is
// a function_call_arguments.delta, CallDone its .done.
func ExampleParser_Events() {
	p := chat.Options{Thinking: true}.NewParserWith(chat.ParseOptions{ResponseID: "resp_1"})
	generated := `Look it up.<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>` +
		`<|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="city" type="string"<|sep|>Paris<|close|>argument<|sep|>` +
		`<|open|>argument key="days" type="number"<|sep|>2<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>`
	show := func(evs []chat.Event) {
		for _, e := range evs {
			switch e.Kind {
			case chat.Reasoning:
				fmt.Printf("reasoning %q\n", e.Text)
			case chat.Content:
				fmt.Printf("content %q\n", e.Text)
			case chat.CallStart:
				fmt.Printf("call %d start %s %s\n", e.Call, e.ID, e.Name)
			case chat.CallArguments:
				fmt.Printf("call %d arguments %s\n", e.Call, e.Text)
			case chat.CallDone:
				fmt.Printf("call %d done\n", e.Call)
			case chat.CallFailed:
				fmt.Printf("call %d failed: %s\n", e.Call, e.Text)
			}
		}
	}
	// Two chunks, as tokens would bring them: the cut falls inside "Paris".
	cut := strings.Index(generated, "aris")
	show(p.Events(generated[:cut]))
	show(p.Events(generated[cut:]))
	show(p.FinishEvents(false))
	out := p.Output()
	fmt.Println(out.Calls[0].Arguments, out.Err)
	// Output:
	// reasoning "Look it up."
	// call 0 start call_e316bef2d55024ea2f85c572 get_weather
	// call 0 arguments {"city":"
	// call 0 arguments P
	// call 0 arguments aris
	// call 0 arguments "
	// call 0 arguments ,"days":
	// call 0 arguments 2
	// call 0 arguments }
	// call 0 done
	// {"city":"Paris","days":2} <nil>
}
