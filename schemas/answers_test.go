package schemas

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalizeFinishReason(t *testing.T) {
	for in, want := range map[string]string{
		"stop": "stop", "STOP": "stop", "length": "length", "MAX_TOKENS": "length", "max_tokens": "length",
		"max_output_tokens": "length", "model_length": "length", " Length ": "length",
		"content_filter": "content_filter", "SAFETY": "content_filter", "RECITATION": "content_filter",
		"PROHIBITED_CONTENT": "content_filter", "refusal": "content_filter", "guardrail_intervened": "content_filter",
		"tool_calls": "tool_calls", "end_turn": "end_turn", "": "",
	} {
		if got := NormalizeFinishReason(in); got != want {
			t.Errorf("NormalizeFinishReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAnswersValidateNamesTheEntry(t *testing.T) {
	err := Answers{FailedFinishReasons: []string{"length", " ", "MAX_TOKENS", "safety"}}.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"answers.failed_finish_reasons[1]: must not be empty",
		`answers.failed_finish_reasons[2]: "MAX_TOKENS" is "length", listed already as [0]`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "[3]") {
		t.Errorf("error %q names the valid entry [3]", err)
	}
	if err := DefaultAnswers().Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestAnswersValidateRefusesNull: nil reasons (YAML null) are an error
// naming the field; an explicit empty list means none.
func TestAnswersValidateRefusesNull(t *testing.T) {
	err := Answers{EmptyOutput: true}.Validate()
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "answers.failed_finish_reasons" || !strings.Contains(fe.Reason, "null") {
		t.Errorf("nil failed_finish_reasons: error %v, want a field error naming answers.failed_finish_reasons", err)
	}
	if err := (Answers{FailedFinishReasons: []string{}, EmptyOutput: true}).Validate(); err != nil {
		t.Errorf("[]: %v, want accepted (none)", err)
	}
}

func TestAnswersIsDefault(t *testing.T) {
	for _, c := range []struct {
		a    Answers
		want bool
	}{
		{DefaultAnswers(), true},
		{Answers{FailedFinishReasons: []string{"SAFETY", "max_tokens"}, EmptyOutput: true}, true},
		{Answers{FailedFinishReasons: []string{"length"}, EmptyOutput: true}, false},
		{Answers{FailedFinishReasons: []string{"length", "content_filter"}}, false},
	} {
		if got := c.a.IsDefault(); got != c.want {
			t.Errorf("%+v: IsDefault %v, want %v", c.a, got, c.want)
		}
	}
}

// BenchmarkClassify is the per-span cost of the failed-answer check (the
// rollups and every burn-rate SLO with failed_answers run it per call).
func BenchmarkClassify(b *testing.B) {
	r := DefaultAnswers().Rule()
	spans := []Span{
		{FinishReason: "stop", OutputTokens: 40, Has: HasOutputTokens, Operation: "chat"},
		{FinishReason: "MAX_TOKENS", OutputTokens: 64, Has: HasOutputTokens, Operation: "chat"},
		{FinishReason: "content_filter", Operation: "chat"},
		{OutputTokens: 0, Has: HasOutputTokens, Operation: "embeddings"},
	}
	n := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if r.Classify(&spans[i%len(spans)]) != AnswerOK {
			n++
		}
	}
	if n == 0 {
		b.Fatal("nothing classified as failed")
	}
}
