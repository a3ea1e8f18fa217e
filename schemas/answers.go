package schemas

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Answers defines a failed answer: a call that did not fail (no error
// status, no error.type) but whose answer the user could not use — cut off,
// filtered, or empty. Gateways see such a call as a success; fusebox counts
// it per key in the rollups and, where an SLO's `bad_events` says so, as a
// bad event of a burn-rate SLO. It is the `answers:` section of the SLO
// file.
//
// A call is a failed answer when it is not an error and
//   - its finish reason (the first of gen_ai.response.finish_reasons,
//     normalised by NormalizeFinishReason) is in FailedFinishReasons, or
//   - EmptyOutput is on, it reports gen_ai.usage.output_tokens = 0 and its
//     operation is not embeddings (an embeddings call has no output
//     tokens by design).
//
// A call with no finish reason and no output token count is never a failed
// answer: absent data is not a failure.
type Answers struct {
	// FailedFinishReasons are the finish reasons that make an answer
	// failed, compared after NormalizeFinishReason (case folded, provider
	// aliases mapped), so `MAX_TOKENS` and `max_tokens` both mean
	// `length`. Default [length, content_filter]: an answer cut off at
	// the token limit or withheld by a safety filter is one the user did
	// not get, while `stop`, `tool_calls` and `function_call` are answers
	// delivered as asked. An explicit empty list ([]) counts no finish
	// reason; nil (a bare `failed_finish_reasons:`, YAML null) is refused
	// by Validate rather than silently meaning none.
	FailedFinishReasons []string `yaml:"failed_finish_reasons"`
	// EmptyOutput makes a non-embeddings call that reports 0 output tokens
	// a failed answer. Default true.
	EmptyOutput bool `yaml:"empty_output"`
}

// Normalised finish reasons that the rollups count on their own.
const (
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
)

// finishAliases maps provider finish reasons (lower case) onto the
// OpenAI names that OpenTelemetry's GenAI conventions use as examples:
// Anthropic (max_tokens, refusal), Google Gemini / Vertex AI (MAX_TOKENS,
// SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII, IMAGE_SAFETY),
// AWS Bedrock (guardrail_intervened, content_filtered), Mistral
// (model_length), the OpenAI Responses API (max_output_tokens,
// incomplete_details.reason) and Cohere (ERROR_TOXIC).
var finishAliases = map[string]string{
	"max_tokens":           FinishLength,
	"max_output_tokens":    FinishLength,
	"model_length":         FinishLength,
	"content_filtered":     FinishContentFilter,
	"safety":               FinishContentFilter,
	"recitation":           FinishContentFilter,
	"blocklist":            FinishContentFilter,
	"prohibited_content":   FinishContentFilter,
	"spii":                 FinishContentFilter,
	"image_safety":         FinishContentFilter,
	"refusal":              FinishContentFilter,
	"guardrail_intervened": FinishContentFilter,
	"error_toxic":          FinishContentFilter,
}

// NormalizeFinishReason folds a finish reason to lower case (trimmed) and
// maps the provider aliases listed on finishAliases to `length` or
// `content_filter`; any other reason is returned lower-cased.
func NormalizeFinishReason(r string) string {
	r = strings.ToLower(strings.TrimSpace(r))
	if a, ok := finishAliases[r]; ok {
		return a
	}
	return r
}

// DefaultAnswers returns the defaults listed on Answers.
func DefaultAnswers() Answers {
	return Answers{FailedFinishReasons: []string{FinishLength, FinishContentFilter}, EmptyOutput: true}
}

// IsDefault reports whether a is the default definition (the reasons
// compared after normalisation, in any order).
func (a Answers) IsDefault() bool {
	r := a.Rule()
	d := DefaultAnswers().Rule()
	if r.empty != d.empty || len(r.reasons) != len(d.reasons) {
		return false
	}
	for k := range r.reasons {
		if _, ok := d.reasons[k]; !ok {
			return false
		}
	}
	return true
}

// Normalized returns a with its finish reasons normalised, sorted and
// without repeats: the form configuration hashes take, so that writing
// `SAFETY` for `content_filter` changes no id.
func (a Answers) Normalized() Answers {
	out := Answers{FailedFinishReasons: []string{}, EmptyOutput: a.EmptyOutput}
	for _, r := range a.FailedFinishReasons {
		if n := NormalizeFinishReason(r); n != "" {
			out.FailedFinishReasons = append(out.FailedFinishReasons, n)
		}
	}
	slices.Sort(out.FailedFinishReasons)
	out.FailedFinishReasons = slices.Compact(out.FailedFinishReasons)
	return out
}

// Validate reports a nil FailedFinishReasons (YAML null: a bare
// `failed_finish_reasons:` that looks like the default but would count no
// finish reason), an empty finish reason and one listed twice (after
// normalisation), each naming answers.failed_finish_reasons[i].
func (a Answers) Validate() error {
	if a.FailedFinishReasons == nil {
		return &FieldError{Field: "answers.failed_finish_reasons", Reason: "is null: list the finish reasons that make an answer failed (default [length, content_filter]), or write [] for none"}
	}
	var errs []error
	seen := map[string]int{}
	for i, r := range a.FailedFinishReasons {
		f := "answers.failed_finish_reasons[" + strconv.Itoa(i) + "]"
		n := NormalizeFinishReason(r)
		if n == "" {
			errs = append(errs, &FieldError{Field: f, Reason: "must not be empty"})
			continue
		}
		if j, dup := seen[n]; dup {
			errs = append(errs, &FieldError{Field: f, Reason: strconv.Quote(r) + " is " + strconv.Quote(n) +
				", listed already as [" + strconv.Itoa(j) + "]"})
			continue
		}
		seen[n] = i
	}
	return errors.Join(errs...)
}

// AnswerFailure is why an answer failed; AnswerOK when it did not (or the
// call is an error, which is counted as an error instead).
type AnswerFailure uint8

const (
	AnswerOK            AnswerFailure = iota
	AnswerLength                      // finish reason length (cut off)
	AnswerContentFilter               // finish reason content_filter (filtered)
	AnswerOtherReason                 // another configured finish reason
	AnswerEmpty                       // no finish reason of the set, and 0 output tokens
)

// AnswerRule is Answers compiled for the per-span check. The nil
// *AnswerRule is the default definition.
type AnswerRule struct {
	reasons map[string]AnswerFailure
	empty   bool
}

// Rule compiles a (validated) definition.
func (a Answers) Rule() *AnswerRule {
	r := &AnswerRule{reasons: map[string]AnswerFailure{}, empty: a.EmptyOutput}
	for _, x := range a.FailedFinishReasons {
		switch n := NormalizeFinishReason(x); n {
		case "":
		case FinishLength:
			r.reasons[n] = AnswerLength
		case FinishContentFilter:
			r.reasons[n] = AnswerContentFilter
		default:
			r.reasons[n] = AnswerOtherReason
		}
	}
	return r
}

var defaultAnswerRule = DefaultAnswers().Rule()

// CountsNothing reports a definition under which no answer fails.
func (r *AnswerRule) CountsNothing() bool { return r != nil && len(r.reasons) == 0 && !r.empty }

// Classify says whether and why the span's answer failed (see Answers).
// An error is never a failed answer. A finish reason of the set wins over
// an empty output (a filtered answer has 0 tokens too).
func (r *AnswerRule) Classify(s *Span) AnswerFailure {
	if r == nil {
		r = defaultAnswerRule
	}
	if s.Error {
		return AnswerOK
	}
	if s.FinishReason != "" && len(r.reasons) > 0 {
		if f, ok := r.lookup(s.FinishReason); ok {
			return f
		}
	}
	if r.empty && s.Has&HasOutputTokens != 0 && s.OutputTokens == 0 && !isEmbeddings(s.Operation) {
		return AnswerEmpty
	}
	return AnswerOK
}

// lookup finds the finish reason in the set as NormalizeFinishReason
// would, without allocating: as written first (most spans carry an OpenAI
// name), else lower-cased in a stack buffer and through the aliases.
func (r *AnswerRule) lookup(reason string) (AnswerFailure, bool) {
	if f, ok := r.reasons[reason]; ok {
		return f, true
	}
	t := strings.TrimSpace(reason)
	var buf [32]byte
	if len(t) > len(buf) {
		f, ok := r.reasons[NormalizeFinishReason(t)]
		return f, ok
	}
	b := buf[:len(t)]
	for i := 0; i < len(t); i++ {
		c := t[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	if f, ok := r.reasons[string(b)]; ok {
		return f, true
	}
	if a, ok := finishAliases[string(b)]; ok {
		f, ok := r.reasons[a]
		return f, ok
	}
	return AnswerOK, false
}

// isEmbeddings reports an embeddings operation: gen_ai.operation.name
// `embeddings` (the convention's name; `embedding` as some libraries
// write it).
func isEmbeddings(op string) bool {
	return op == "embeddings" || op == "embedding"
}
