package registry

import (
	"reflect"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
)

// Kinds returns every kind fusebox ships, in a fixed order: the order of
// an SLO entry's sections in error messages and in the configuration
// hash. The slice is new on every call. A new processor is one line here.
func Kinds() []processors.Kind {
	return []processors.Kind{
		tail.Kind(),
		drift.Kind(),
		decay.Kind(),
		scaling.Kind(),
		corrections.Kind(),
		burnrate.Kind(),
	}
}

// List is an ordered list of kinds, with lookups by name and by
// configuration type. Default is the list of Kinds; With extends it. A
// List is immutable: its methods return copies.
type List struct{ kinds []processors.Kind }

// Default returns the List of Kinds: what `fusebox run` and `fusebox
// config check` accept.
func Default() List { return List{kinds: Kinds()} }

// With returns the List of Kinds followed by kinds (a test's own kind, for
// instance). The kinds' names must differ from each other and from those
// of Kinds; With panics otherwise (a programming error: two kinds would
// claim one SLO section key).
func With(kinds ...processors.Kind) List {
	l := Default()
	for _, k := range kinds {
		if _, dup := l.Lookup(k.Name); dup {
			panic("registry: two kinds named " + k.Name)
		}
		l.kinds = append(l.kinds, k)
	}
	return l
}

// Kinds returns the list's kinds in order; the slice is a copy.
func (l List) Kinds() []processors.Kind { return append([]processors.Kind(nil), l.kinds...) }

// Len is the number of kinds.
func (l List) Len() int { return len(l.kinds) }

// Lookup returns the kind called name.
func (l List) Lookup(name string) (processors.Kind, bool) {
	for _, k := range l.kinds {
		if k.Name == name {
			return k, true
		}
	}
	return processors.Kind{}, false
}

// Names returns every kind's name, in order.
func (l List) Names() []string {
	out := make([]string, len(l.kinds))
	for i, k := range l.kinds {
		out[i] = k.Name
	}
	return out
}

// Of returns the kind whose Default makes configurations of cfg's type.
func (l List) Of(cfg processors.Config) (processors.Kind, bool) {
	for _, k := range l.kinds {
		if reflect.TypeOf(k.Default()) == reflect.TypeOf(cfg) {
			return k, true
		}
	}
	return processors.Kind{}, false
}

// Lookup is Default().Lookup.
func Lookup(name string) (processors.Kind, bool) { return Default().Lookup(name) }

// Names is Default().Names.
func Names() []string { return Default().Names() }

// Of is Default().Of.
func Of(cfg processors.Config) (processors.Kind, bool) { return Default().Of(cfg) }
