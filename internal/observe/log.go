package observe

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// ComponentKey is the attribute naming the part of fusebox that logged a
// line (ingest, engine, sink.clickhouse, ...).
const ComponentKey = "component"

// DefaultComponent is the component of a logger nobody named.
const DefaultComponent = "fusebox"

// NewLogger returns a logger writing one JSON object per line to w:
//
//	{"time":"2025-03-04T10:00:00.123456789Z","level":"INFO","msg":"...","component":"fusebox",...}
//
// time is UTC RFC 3339 with nanoseconds. level is debug, info, warn or
// error (case-insensitive; "warning" is warn); lines below it are dropped.
// Every line has exactly one component: DefaultComponent until a
// logger.With("component", "ingest") replaces it (rather than adding a
// second key, as slog would).
func NewLogger(w io.Writer, level string) (*slog.Logger, error) {
	return NewFormatLogger(w, level, FormatJSON)
}

// The log formats of log.format.
const (
	FormatJSON = "json" // one JSON object per line (the default)
	FormatText = "text" // slog's key=value lines: time=... level=INFO msg=... component=...
)

// NewFormatLogger is NewLogger in the given format, FormatJSON or
// FormatText ("" is FormatJSON). Both carry the same keys: time (UTC RFC
// 3339), level, msg, component, then the line's attributes.
func NewFormatLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lv, err := ParseLevel(level)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{
		Level: lv,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
				return slog.String(slog.TimeKey, a.Value.Time().UTC().Format(time.RFC3339Nano))
			}
			return a
		},
	}
	var base slog.Handler
	switch strings.ToLower(strings.TrimSpace(format)) {
	case FormatJSON, "":
		base = slog.NewJSONHandler(w, opts)
	case FormatText:
		base = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("observe: log format %q: want json or text", format)
	}
	return slog.New(newComponentHandler(base, DefaultComponent, nil)), nil
}

// ParseLevel reads debug, info, warn (or warning) and error,
// case-insensitively.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info", "":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("observe: log level %q: want debug, info, warn or error", s)
}

// handlerOp is a WithAttrs or WithGroup applied after the component.
type handlerOp struct {
	group string // WithGroup(group) when attrs is nil
	attrs []slog.Attr
}

// componentHandler keeps the component attribute unique: it is written
// right after msg, and a new one replaces the old.
type componentHandler struct {
	base      slog.Handler // without attributes
	component string
	ops       []handlerOp
	h         slog.Handler // base + component + ops
}

func newComponentHandler(base slog.Handler, component string, ops []handlerOp) *componentHandler {
	h := base.WithAttrs([]slog.Attr{slog.String(ComponentKey, component)})
	for _, op := range ops {
		if op.attrs == nil {
			h = h.WithGroup(op.group)
		} else {
			h = h.WithAttrs(op.attrs)
		}
	}
	return &componentHandler{base: base, component: component, ops: ops, h: h}
}

// inGroup reports whether attributes now land inside a group, where a
// "component" key is an ordinary attribute.
func (c *componentHandler) inGroup() bool {
	for _, op := range c.ops {
		if op.attrs == nil {
			return true
		}
	}
	return false
}

func (c *componentHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return c.h.Enabled(ctx, l)
}

func (c *componentHandler) Handle(ctx context.Context, r slog.Record) error {
	if c.inGroup() {
		return c.h.Handle(ctx, r)
	}
	comp, found := "", false
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == ComponentKey {
			comp, found = a.Value.String(), true
		}
		return true
	})
	if !found {
		return c.h.Handle(ctx, r)
	}
	// A component given on the line itself wins, still once.
	nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != ComponentKey {
			nr.AddAttrs(a)
		}
		return true
	})
	return newComponentHandler(c.base, comp, c.ops).h.Handle(ctx, nr)
}

func (c *componentHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return c
	}
	comp := c.component
	rest := make([]slog.Attr, 0, len(attrs))
	for _, a := range attrs {
		if a.Key == ComponentKey && !c.inGroup() {
			comp = a.Value.String()
			continue
		}
		rest = append(rest, a)
	}
	ops := c.ops[:len(c.ops):len(c.ops)] // appends must not share the parent's array
	if len(rest) > 0 {
		ops = append(ops, handlerOp{attrs: rest})
	}
	return newComponentHandler(c.base, comp, ops)
}

func (c *componentHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return c
	}
	return newComponentHandler(c.base, c.component, append(c.ops[:len(c.ops):len(c.ops)], handlerOp{group: name}))
}
