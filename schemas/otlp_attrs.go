package schemas

import (
	"encoding/binary"
	"math/bits"
)

// attrID numbers the attributes the OTLP decoders map; a uint64 bit set of
// them says which ones a key matched or a span has seen.
type attrID uint8

const (
	idOperation attrID = iota
	idProvider
	idSystem
	idRequestModel
	idResponseModel
	idInputTokens
	idOutputTokens
	idFinishReasons
	idTTFC
	idErrorType
	idServiceName
	idTenant
	idVariant
	idConfidence
	idAlignment
	idSession
	idRoute
	// The variants of newer and older GenAI conventions (after the
	// configurable ones so that the sets above keep their bits).
	idTTFT          // gen_ai.response.time_to_first_token: TTFT when time_to_first_chunk is absent
	idStream        // gen_ai.request.stream
	idCacheRead     // gen_ai.usage.cache_read.input_tokens
	idCacheReadOld  // gen_ai.usage.cache_read_input_tokens
	idCacheWrite    // gen_ai.usage.cache_creation.input_tokens
	idCacheWriteOld // gen_ai.usage.cache_creation_input_tokens
	idReasoning     // gen_ai.usage.reasoning.output_tokens
	idResponseID    // gen_ai.response.id
	// The forms instrumentation libraries write besides the GenAI
	// conventions (see otlp.go for the order in which they count).
	idServerTTFT      // gen_ai.server.time_to_first_token (openlit), seconds
	idServerTPOT      // gen_ai.server.time_per_output_token (openlit), seconds per token
	idIsStreaming     // gen_ai.is_streaming (OpenLLMetry)
	idLLMIsStreaming  // llm.is_streaming (older OpenLLMetry)
	idLLMModel        // llm.model_name (OpenInference: the response model)
	idLLMInvocation   // llm.invocation_parameters (OpenInference: JSON, its "model" the request model)
	idEmbModel        // embedding.model_name (OpenInference embedding spans)
	idEmbInvocation   // embedding.invocation_parameters (OpenInference embedding spans)
	idLLMPromptTokens // llm.token_count.prompt
	idLLMOutputTokens // llm.token_count.completion
	idLLMProvider     // llm.provider
	idLLMSystem       // llm.system
	idLLMFinish       // llm.finish_reason
	idOISpanKind      // openinference.span.kind
	numAttrIDs
)

// llmIDs are the mapped attributes that make a span look like an LLM call
// (see looksLLM): the gen_ai.* and llm.* ones.
const llmIDs uint64 = (1<<numAttrIDs - 1) &^ (1<<idErrorType | 1<<idServiceName | configurable | 1<<idOISpanKind)

const (
	// configurable is the set of attributes named by AttributeNames: read on the
	// span first, then on the resource.
	configurable uint64 = 1<<idTenant | 1<<idVariant | 1<<idConfidence | 1<<idAlignment | 1<<idSession | 1<<idRoute
	// spanScope is what a span attribute may map to (service.name is a resource attribute).
	spanScope uint64 = (1<<numAttrIDs - 1) &^ (1 << idServiceName)
	// resourceScope is what a resource attribute may map to.
	resourceScope uint64 = 1<<idServiceName | configurable
)

// keyMatcher finds which mapped attributes a key names without allocating:
// a bucket by key length narrows the candidates to one or two string compares.
type keyMatcher struct {
	names  [numAttrIDs]string
	tails  [numAttrIDs]uint64 // keyTail of each name: rejects most candidates without a compare
	bucket [64]uint64         // bit i set when len(names[i])%64 is the index
	// heads holds each name's leading 8-byte words (names of 8 to
	// 8*len(heads[i]) bytes), compared word by word instead of calling memequal.
	heads [numAttrIDs][maxWordKey / 8]uint64
}

// maxWordKey is the longest name compared by words; longer ones use a string
// compare.
const maxWordKey = 48

// keyTail packs the last (up to) 8 bytes of a key: names that share a length
// ("gen_ai.provider.name", "gen_ai.request.model") differ there.
func keyTail(k string) uint64 {
	if len(k) >= 8 {
		return binary.LittleEndian.Uint64([]byte(k[len(k)-8:]))
	}
	var t uint64
	for i := 0; i < len(k); i++ {
		t = t<<8 | uint64(k[i])
	}
	return t
}

func (m *keyMatcher) init(n AttributeNames) {
	n = n.withDefaults()
	m.names = [numAttrIDs]string{
		idOperation:     "gen_ai.operation.name",
		idProvider:      "gen_ai.provider.name",
		idSystem:        "gen_ai.system",
		idRequestModel:  "gen_ai.request.model",
		idResponseModel: "gen_ai.response.model",
		idInputTokens:   "gen_ai.usage.input_tokens",
		idOutputTokens:  "gen_ai.usage.output_tokens",
		idFinishReasons: "gen_ai.response.finish_reasons",
		idTTFC:          "gen_ai.response.time_to_first_chunk",
		idErrorType:     "error.type",
		idServiceName:   "service.name",
		idTenant:        n.Tenant,
		idVariant:       n.Variant,
		idConfidence:    n.Confidence,
		idAlignment:     n.Alignment,
		idSession:       n.Session,
		idRoute:         n.Route,
		idTTFT:          "gen_ai.response.time_to_first_token",
		idStream:        "gen_ai.request.stream",
		idCacheRead:     "gen_ai.usage.cache_read.input_tokens",
		idCacheReadOld:  "gen_ai.usage.cache_read_input_tokens",
		idCacheWrite:    "gen_ai.usage.cache_creation.input_tokens",
		idCacheWriteOld: "gen_ai.usage.cache_creation_input_tokens",
		idReasoning:     "gen_ai.usage.reasoning.output_tokens",
		idResponseID:    "gen_ai.response.id",
		// Instrumentation libraries' own names.
		idServerTTFT:      "gen_ai.server.time_to_first_token",
		idServerTPOT:      "gen_ai.server.time_per_output_token",
		idIsStreaming:     "gen_ai.is_streaming",
		idLLMIsStreaming:  "llm.is_streaming",
		idLLMModel:        "llm.model_name",
		idLLMInvocation:   "llm.invocation_parameters",
		idEmbModel:        "embedding.model_name",
		idEmbInvocation:   "embedding.invocation_parameters",
		idLLMPromptTokens: "llm.token_count.prompt",
		idLLMOutputTokens: "llm.token_count.completion",
		idLLMProvider:     "llm.provider",
		idLLMSystem:       "llm.system",
		idLLMFinish:       "llm.finish_reason",
		idOISpanKind:      "openinference.span.kind",
	}
	for i, s := range m.names {
		m.bucket[len(s)&63] |= 1 << i
		m.tails[i] = keyTail(s)
		for j := 0; j+8 <= len(s) && j < maxWordKey; j += 8 {
			m.heads[i][j/8] = binary.LittleEndian.Uint64([]byte(s[j : j+8]))
		}
	}
}

// match returns the set of attributes within scope whose name is k. A key
// may name several when a configured name repeats a GenAI one.
func (m *keyMatcher) match(k []byte, scope uint64) uint64 {
	cand := m.bucket[len(k)&63] & scope
	if cand == 0 {
		return 0
	}
	n := len(k)
	if n < 8 || n > maxWordKey {
		var hit uint64
		for ; cand != 0; cand &= cand - 1 {
			if i := bits.TrailingZeros64(cand); m.names[i] == string(k) {
				hit |= 1 << i
			}
		}
		return hit
	}
	// The key's last word, then its leading words: together they cover it.
	tail := binary.LittleEndian.Uint64(k[n-8:])
	var hit uint64
	for ; cand != 0; cand &= cand - 1 {
		i := bits.TrailingZeros64(cand)
		if m.tails[i] != tail || len(m.names[i]) != n {
			continue
		}
		h := &m.heads[i]
		j := 0
		for ; j+8 <= n; j += 8 {
			if binary.LittleEndian.Uint64(k[j:j+8]) != h[j>>3] {
				break
			}
		}
		if j+8 > n {
			hit |= 1 << i
		}
	}
	return hit
}

// valKind is the type of an AnyValue, as far as the mapping cares.
type valKind uint8

const (
	// kindEmpty is a value with no oneof field set, or one set to
	// string_value_strindex (a profiles-only reference into a dictionary that
	// traces do not have; pdata shows it as empty too): it counts as absent.
	kindEmpty valKind = iota
	kindString
	kindBool
	kindInt
	kindDouble
	kindArray
	kindKvlist
	kindBytes
)

var kindNames = [...]string{"empty", "string", "bool", "int", "double", "array", "kvlist", "bytes"}

func (k valKind) String() string { return kindNames[k] }

// attrVal is one decoded AnyValue. Strings point into the message (or a
// decoder's scratch buffer) and are only copied when kept.
type attrVal struct {
	kind valKind
	str  []byte  // kindString, kindBytes
	i    int64   // kindInt
	f    float64 // kindDouble
	// Arrays carry only their first element, all that finish_reasons needs.
	hasFirst  bool
	firstKind valKind
	firstStr  []byte
	firstI    int64
}

// problem is why a mapped attribute could not be used; the zero value means none.
type problem struct {
	kind   error // ErrInvalid or ErrMalformed
	reason string
}

// badAttr remembers the first unusable mapped attribute of a span or resource.
// It is only raised when the span turns out to be an LLM call.
type badAttr struct {
	set bool
	id  attrID
	problem
}

func (b *badAttr) note(id attrID, p problem) {
	if !b.set && p.kind != nil {
		*b = badAttr{set: true, id: id, problem: p}
	}
}

// spanState is what a decoder tracks for the span it is reading.
type spanState struct {
	seen   uint64 // mapped attributes already seen: the first occurrence wins
	system string // gen_ai.system, the fallback for gen_ai.provider.name
	// The fallbacks of the older names, applied by finishSpan when the
	// newer name is absent (has holds HasTTFT, HasCacheReadTokens,
	// HasCacheWriteTokens for them).
	ttftMs                float64
	cacheRead, cacheWrite int64
	has                   Fields
	ttftOlder             bool   // the TTFT is gen_ai.response.time_to_first_token's
	name                  []byte // the span's name, for the operation of "{operation} {model}"
	bad                   badAttr
	attrs                 int // attributes counted against max_attributes_per_span
	lib                   libState
}

// libState holds the forms of instrumentation libraries' own attributes
// and events, applied by finishSpan where the GenAI names are absent.
type libState struct {
	has                 libFields
	serverTTFTMs        float64 // gen_ai.server.time_to_first_token * 1000
	serverTPOTMs        float64 // gen_ai.server.time_per_output_token * 1000
	isStreaming         bool    // gen_ai.is_streaming
	llmStreaming        bool    // llm.is_streaming
	invStream           bool    // "stream" of the invocation parameters
	promptTok, complTok int64   // llm.token_count.prompt / .completion
	// Strings of llm.* / embedding.* / openinference.* attributes.
	llmModel, invModel  string             // llm.model_name, the invocation parameters' "model"
	embModel, embInv    string             // embedding.model_name, embedding.invocation_parameters' "model"
	provider, system    string             // llm.provider, llm.system
	finish, kind        string             // llm.finish_reason, openinference.span.kind
	chunkNs, firstTokNs int64              // earliest completion chunk / First Token Stream Event time
	events              int                // events read, for error paths
	keys                [maxLLMKeys][]byte // unmapped gen_ai.* / llm.* keys, for the unkeyed log
	nKeys               int
	llmKey              bool // an unmapped gen_ai.* or llm.* key was seen
	// dropped is the reason libTiming left the span's library-form TTFT
	// out (a dropped* constant), counted by finishSpan once the span is
	// known to be an LLM call.
	dropped uint8
}

// The reasons of libState.dropped.
const (
	droppedNone uint8 = iota
	droppedEventBeforeStart
	droppedEventAfterEnd
	droppedServerTTFT
)

// maxLLMKeys is how many of a span's unmapped gen_ai.* / llm.* keys are
// kept to name in DecodeStats.Unkeyed.
const maxLLMKeys = 4

// libFields says which libState values are present.
type libFields uint16

const (
	libServerTTFT libFields = 1 << iota
	libServerTPOT
	libIsStreaming
	libLLMStreaming
	libInvStream
	libPromptTok
	libComplTok
	libChunk
	libFirstTok
)

// resourceVals holds what a resource contributes to its spans.
type resourceVals struct {
	seen                     uint64
	service, tenant, variant string
	session, route           string
	confidence, alignment    float64
	has                      Fields // HasConfidence, HasAlignment
	bad                      badAttr
	attrs                    int
}
