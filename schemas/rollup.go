package schemas

// Rollup is one key's span traffic in one closed event-time minute, written
// once per (key, minute) so that a replay replaces rather than adds.
// Latencies are kept for ClickHouse's quantilesState; they are capped by the
// engine (every k-th value past the cap, deterministic), with N counting all.
type Rollup struct {
	Key            Key
	MinuteUnixNano int64 // start of the minute
	N              int64 // spans
	Errors         int64
	InputTokens    int64
	OutputTokens   int64
	// CacheReadTokens, CacheWriteTokens and ReasoningTokens sum the spans'
	// counts of those kinds (spans without one add nothing).
	CacheReadTokens  int64
	CacheWriteTokens int64
	ReasoningTokens  int64
	DurationsMs      []float64
	TTFTsMs          []float64
	// TPOTsMs are the times per output token (Span.TPOTMs, ms/token) of the
	// spans that have one, capped as the latencies are.
	TPOTsMs     []float64
	Corrections int64
	LateSpans   int64 // spans for this minute that arrived after it closed
	// FailedAnswers counts the calls that were no error but whose answer
	// failed (Answers: a finish reason of the set, or no output), of them
	// FailedLength cut off (finish reason length), FailedContentFilter
	// filtered (content_filter) and EmptyAnswers empty (0 output tokens, no
	// finish reason of the set); the rest had another configured finish
	// reason.
	FailedAnswers       int64
	FailedLength        int64
	FailedContentFilter int64
	EmptyAnswers        int64
}
