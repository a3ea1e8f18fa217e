package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/registry"
	"github.com/fusebox-dev/fusebox/schemas"
)

// validate checks everything the decoder cannot.
func (f *File) validate(kinds registry.List) []fieldErr {
	var errs []fieldErr
	fail := func(bad bool, field, reason string) {
		if bad {
			errs = append(errs, fieldErr{field, reason})
		}
	}

	fail(f.Compat.WriteFormats != WriteFormatsCurrent && f.Compat.WriteFormats != WriteFormatsPrevious, "compat.write_formats",
		"must be "+WriteFormatsCurrent+" or "+WriteFormatsPrevious+", got "+strconv.Quote(f.Compat.WriteFormats))
	fail(len(f.Kafka.Brokers) == 0, "kafka.brokers", "list at least one broker host:port")
	for i, b := range f.Kafka.Brokers {
		_, _, err := net.SplitHostPort(b)
		fail(err != nil, "kafka.brokers["+strconv.Itoa(i)+"]", "want host:port, got "+strconv.Quote(b))
	}
	fail(f.Kafka.Group == "", "kafka.group", "must not be empty")
	switch f.Kafka.SASL.Mechanism {
	case "":
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		fail(f.Kafka.SASL.Username == "", "kafka.sasl.username", "must be set with a SASL mechanism")
		fail(f.Kafka.SASL.Password == "" && f.Kafka.SASL.PasswordEnv == "", "kafka.sasl.password", "set password or password_env")
	default:
		fail(true, "kafka.sasl.mechanism", "must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got "+strconv.Quote(f.Kafka.SASL.Mechanism))
	}
	errs = append(errs, tlsErrs("kafka.tls", f.Kafka.TLS)...)
	errs = append(errs, f.validateIncidents()...)

	t := &f.Topics
	fail(len(t.Spans) == 0, "topics.spans", "list at least one span topic")
	fail(t.SpanEncoding != "otlp_proto" && t.SpanEncoding != "otlp_json" && t.SpanEncoding != "auto",
		"topics.span_encoding", "must be otlp_proto, otlp_json or auto, got "+strconv.Quote(t.SpanEncoding))
	fail(t.KeyedPartitions < 1, "topics.keyed_partitions", "must be at least 1")
	fail(t.ReplicationFactor == 0 || t.ReplicationFactor < -1, "topics.replication_factor",
		"must be -1 (the broker's default) or at least 1, got "+strconv.Itoa(int(t.ReplicationFactor)))
	fail(t.MinInsyncReplicas < 0, "topics.min_insync_replicas", "must be 0 (the broker's default) or at least 1, got "+strconv.Itoa(t.MinInsyncReplicas))
	fail(t.ReplicationFactor > 0 && t.MinInsyncReplicas > int(t.ReplicationFactor), "topics.min_insync_replicas",
		fmt.Sprintf("%d is more than topics.replication_factor %d: no write could be acknowledged", t.MinInsyncReplicas, t.ReplicationFactor))
	names := map[string]string{}
	for _, n := range []struct{ field, topic string }{
		{"topics.keyed", t.Keyed}, {"topics.state", t.State}, {"topics.verdicts", t.Verdicts},
		{"topics.fuse", t.Fuse}, {"topics.dlq", t.DLQ}, {"topics.summaries", t.Summaries}, {"topics.incidents", t.Incidents},
	} {
		fail(n.topic == "", n.field, "must not be empty")
		if other, dup := names[n.topic]; dup && n.topic != "" {
			fail(true, n.field, "same topic as "+other)
		}
		names[n.topic] = n.field
	}
	for i, s := range append(slices.Clone(t.Spans), t.Corrections...) {
		if other, dup := names[s]; dup {
			fail(true, "topics", "source topic "+strconv.Quote(s)+" is also "+other)
		}
		fail(s == "", "topics.spans", "topic "+strconv.Itoa(i)+" is empty")
	}

	if f.Evaluations.Enabled() {
		for i, s := range t.Logs {
			if other, dup := names[s]; dup {
				fail(true, "topics.logs", "log topic "+strconv.Quote(s)+" is also "+other)
			}
			if slices.Contains(t.Spans, s) || slices.Contains(t.Corrections, s) {
				fail(true, "topics.logs", "log topic "+strconv.Quote(s)+" is also a span or correction topic")
			}
			fail(s == "", "topics.logs", "topic "+strconv.Itoa(i)+" is empty")
		}
	}
	errs = append(errs, collect("evaluations", f.Evaluations.Validate())...)
	errs = append(errs, collect("attributes", f.Attributes.Validate())...)
	errs = append(errs, collect("limits", f.Limits.Validate())...)
	errs = append(errs, collect("answers", f.Answers.Validate())...)

	dims := map[string]bool{}
	for i, d := range f.Keys.Dimensions {
		fail(!slices.Contains(schemas.Dimensions, d), "keys.dimensions["+strconv.Itoa(i)+"]", "must be "+orList(schemas.Dimensions)+", got "+strconv.Quote(d))
		dims[d] = true
	}
	fail(f.Keys.MaxTenants < 0 || f.Keys.MaxServices < 0 || f.Keys.MaxModels < 0 || f.Keys.MaxVariants < 0 || f.Keys.MaxKeys < 0,
		"keys", "max_* must not be negative (0 means no limit)")
	fail(f.Keys.IdleTTL < 0, "keys.idle_ttl", "must not be negative")

	fail(f.Time.AllowedLateness < 0, "time.allowed_lateness", "must not be negative")
	fail(f.Time.IdleSourceTimeout <= 0, "time.idle_source_timeout", "must be positive")
	fail(f.Time.MaxFutureSkew <= 0, "time.max_future_skew", "must be positive")
	fail(f.Time.WatermarkStallEvaluations < 1, "time.watermark_stall_evaluations", "must be at least 1")
	fail(f.Log.RejectionsEvery <= 0, "log.rejections_every", "must be positive")
	fail(f.Time.CheckpointEvery <= 0, "time.checkpoint_every", "must be positive")
	fail(f.Time.CheckpointRecords < 1000, "time.checkpoint_records", "must be at least 1000")
	fail(f.Time.MaxUnackedBytes < 1<<20, "time.max_unacked_bytes", "must be at least 1048576 (1 MiB)")

	fail(len(f.SLOs) == 0, "slos", "define at least one SLO")
	seen := map[string]int{}
	for i := range f.SLOs {
		s := &f.SLOs[i]
		p := "slos[" + strconv.Itoa(i) + "]"
		fail(s.Name == "", p+".name", "must not be empty")
		fail(strings.HasPrefix(s.Name, "_"), p+".name", "names starting with _ are reserved")
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			fail(true, p+".name", "same name as slos["+strconv.Itoa(j)+"]")
		}
		seen[s.Name] = i
		for j, op := range s.Match.Operation {
			fail(strings.TrimSpace(op) == "", p+".match.operation["+strconv.Itoa(j)+"]", "must not be empty (a gen_ai.operation.name such as chat or embeddings)")
		}
		var set []string
		for _, sec := range s.Sections {
			set = append(set, sec.Kind.Name)
			errs = append(errs, collect(p+"."+sec.Kind.Name, sec.Config.Validate())...)
			errs = append(errs, collect(p+"."+sec.Kind.Name, sec.Kind.CheckDimensions(sec.Config, f.Keys.Dimensions))...)
			if u, ok := sec.Config.(processors.AnswersUser); ok && u.UsesAnswers() && f.Answers.Rule().CountsNothing() {
				fail(true, p+"."+sec.Kind.Name+".bad_events", "counts failed_answers, but answers defines none (failed_finish_reasons is empty and empty_output false)")
			}
		}
		switch {
		case len(set) == 0:
			fail(true, p, "needs one processor section: "+orList(kinds.Names()))
		case len(set) > 1:
			fail(true, p, "has "+strings.Join(set, " and ")+": one processor per SLO entry")
		}
	}
	errs = append(errs, validateBreaker(&f.Breaker, dims)...)
	errs = append(errs, collect("effect", f.Effect.Validate())...)

	fail(f.Signing.ActiveKey != "" && f.Signing.KeysFile == "" && f.Signing.KeysEnv == "", "signing.active_key", "set keys_file or keys_env too")
	fail(f.Signing.ExpiryWarning < 0, "signing.expiry_warning", "must not be negative")

	ch := &f.Sinks.ClickHouse
	for i, a := range ch.Addr {
		_, _, err := net.SplitHostPort(a)
		fail(err != nil, "sinks.clickhouse.addr["+strconv.Itoa(i)+"]", "want host:port (native protocol, usually 9000), got "+strconv.Quote(a))
	}
	if len(ch.Addr) > 0 {
		fail(ch.Database == "", "sinks.clickhouse.database", "must not be empty")
		fail(ch.BatchRows < 1, "sinks.clickhouse.batch_rows", "must be positive")
		fail(ch.BufferRows < ch.BatchRows, "sinks.clickhouse.buffer_rows", "must be at least batch_rows")
		fail(ch.FlushEvery <= 0, "sinks.clickhouse.flush_every", "must be positive")
		errs = append(errs, tlsErrs("sinks.clickhouse.tls", ch.TLS)...)
	}
	fail(f.Sinks.Kafka.Enabled && f.Sinks.Kafka.Partitions < 1, "sinks.kafka.partitions", "must be at least 1")
	fail(!f.Sinks.Kafka.Enabled && len(ch.Addr) == 0 && f.Sinks.JSONL.Path == "", "sinks", "enable at least one sink")
	fail(f.Rollups.Enabled && f.Rollups.MaxSamplesPerMinute < 1, "rollups.max_samples_per_minute", "must be positive")

	fail(f.HTTP.UI && f.HTTP.Listen == "", "http.ui", "the live page needs http.listen (it is served on that listener)")
	if f.HTTP.Listen != "" {
		_, _, err := net.SplitHostPort(f.HTTP.Listen)
		fail(err != nil, "http.listen", "want host:port, got "+strconv.Quote(f.HTTP.Listen))
	}
	switch f.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		fail(true, "log.level", "must be debug, info, warn or error")
	}
	switch f.Log.Format {
	case "json", "text":
	default:
		fail(true, "log.format", "must be json or text")
	}
	return errs
}

// orList is "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func tlsErrs(prefix string, t TLS) []fieldErr {
	var errs []fieldErr
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, fieldErr{prefix + ".cert_file", "cert_file and key_file go together"})
	}
	if !t.Enabled && (t.CAFile != "" || t.CertFile != "") {
		errs = append(errs, fieldErr{prefix + ".enabled", "TLS files given but enabled is false"})
	}
	return errs
}
