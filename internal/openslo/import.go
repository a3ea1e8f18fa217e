package openslo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/burnrate"
	"github.com/fusebox-dev/fusebox/processors/corrections"
	"github.com/fusebox-dev/fusebox/processors/decay"
	"github.com/fusebox-dev/fusebox/processors/drift"
	"github.com/fusebox-dev/fusebox/processors/registry"
	"github.com/fusebox-dev/fusebox/processors/scaling"
	"github.com/fusebox-dev/fusebox/processors/tail"
	"github.com/fusebox-dev/fusebox/schemas"
	"go.yaml.in/yaml/v3"
)

// Input is one OpenSLO file: its name (in problems) and its bytes, one or
// more YAML documents.
type Input struct {
	Name string
	Data []byte
}

// Result is what Import made of its inputs.
type Result struct {
	// File is a fusebox SLO file holding the SLOs that mapped (`slos:`
	// only), each field that differs from its kind's default written out.
	// With refused problems it holds the SLOs that mapped, without the
	// refused fields (their defaults in their place), less those that
	// `fusebox config check` would then refuse (LeftOut): it loads.
	File []byte
	// SLOs is the number of SLOs in File.
	SLOs int
	// LeftOut names the SLOs that mapped but that `fusebox config check`
	// refuses (their problems are in Problems), as "FILE: document N (SLO
	// NAME)": File leaves them out, so that it always loads.
	LeftOut []string
	// Problems is every field that did not map (refused) and every field
	// left out as descriptive (ignored), in input order.
	Problems Problems
}

// Importer reads OpenSLO documents into fusebox SLOs of Kinds. The zero
// Importer imports for registry.Default().
type Importer struct {
	Kinds registry.List
}

func (im Importer) kinds() registry.List {
	if im.Kinds.Len() == 0 {
		return registry.Default()
	}
	return im.Kinds
}

// Import reads every document of files: OpenSLO v1 (SLO, SLI,
// AlertPolicy, AlertCondition, AlertNotificationTarget, DataSource,
// Service) and v1alpha SLOs (the form Sloth reads). Each SLO becomes one
// fusebox SLO; what does not map is a Problem. The result's File is
// checked as `fusebox config check` checks a file (config.Loader.Parse);
// its errors are problems of the SLO documents they come from. The error
// is not nil only when the result could not be written.
func (im Importer) Import(files []Input) (*Result, error) {
	var probs Problems
	var docs []*doc
	for _, f := range files {
		docs = append(docs, parseDocs(f, &probs)...)
	}
	idx := map[string]*doc{}
	for _, d := range docs {
		if d.kind == "SLO" || d.name == "" {
			continue
		}
		key := d.kind + "/" + d.name
		if prev, dup := idx[key]; dup {
			d.refuse(d.root.line("metadata"), "metadata.name", fmt.Sprintf("a second %s named %q (the first: %s document %d)", d.kind, d.name, prev.file, prev.index))
			continue
		}
		idx[key] = d
	}
	im2 := &importer{kinds: im.kinds(), idx: idx, conds: map[*doc]*condIn{}}
	var out []built
	names := map[string]*doc{}
	for _, d := range docs {
		if d.kind != "SLO" {
			continue
		}
		if prev, dup := names[d.name]; dup && d.name != "" {
			d.refuse(d.root.line("metadata"), "metadata.name", fmt.Sprintf("a second SLO named %q (the first: %s document %d)", d.name, prev.file, prev.index))
			continue
		}
		names[d.name] = d
		var in *sloIn
		if d.version == APIVersionV1Alpha {
			in = im2.readV1Alpha(d)
		} else {
			in = im2.readV1(d)
		}
		if in == nil {
			continue
		}
		if b, ok := im2.build(in); ok {
			out = append(out, b)
		}
	}
	for _, d := range docs {
		im2.leftOver(d)
		d.finish()
	}
	file, out, left, err := im2.check(out, &probs)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(probs, func(i, j int) bool {
		a, b := probs[i], probs[j]
		if a.File != b.File {
			return fileOrder(files, a.File) < fileOrder(files, b.File)
		}
		if a.Document != b.Document {
			return a.Document < b.Document
		}
		return a.Line < b.Line
	})
	return &Result{File: file, SLOs: len(out), Problems: probs, LeftOut: left}, nil
}

// check writes the mapped SLOs as a file and checks it as `fusebox config
// check` does (config.Loader.Parse, then config.WorkerConfig, which builds
// each SLO's processor); each SLO it refuses becomes problems of its
// document and is left out, and the rest is written and checked again,
// until the file loads. A refusal of no one SLO leaves them all out. It
// returns the file, the SLOs in it and the SLOs left out ("FILE: document
// N (SLO NAME)").
func (im *importer) check(out []built, probs *Problems) ([]byte, []built, []string, error) {
	var left []string
	for {
		file, err := writeFile(out)
		if err != nil || len(out) == 0 {
			return file, out, left, err
		}
		var bad map[int]bool
		f, err := (config.Loader{Kinds: im.kinds}).Parse("imported", file)
		if err != nil {
			ps, idx := configProblems(err, out)
			*probs = append(*probs, ps...)
			bad = idx
		} else if _, err := config.WorkerConfig(f); err != nil {
			ps, idx := configProblems(err, out)
			*probs = append(*probs, ps...)
			bad = idx
		} else {
			return file, out, left, nil
		}
		var keep []built
		for i, b := range out {
			if len(bad) == 0 || bad[i] {
				left = append(left, fmt.Sprintf("%s: document %d (SLO %s)", b.d.file, b.d.index, b.d.name))
				continue
			}
			keep = append(keep, b)
		}
		out = keep
	}
}

func fileOrder(files []Input, name string) int {
	for i, f := range files {
		if f.Name == name {
			return i
		}
	}
	return len(files)
}

// parseDocs splits one file into its documents and reads their headers.
func parseDocs(f Input, probs *Problems) []*doc {
	var out []*doc
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	for i := 1; ; i++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			if i == 1 {
				*probs = append(*probs, &Problem{File: f.Name, Document: 1, Reason: "no YAML document in the file"})
			}
			return out
		}
		d := &doc{file: f.Name, index: i, problems: probs}
		if err != nil {
			d.refuse(yamlLine(err), "(document)", "not YAML: "+err.Error())
			return out // the decoder cannot go on past a syntax error
		}
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			d.refuse(n.Line, "(document)", "want a mapping with apiVersion, kind, metadata and spec")
			continue
		}
		d.root = d.obj(n.Content[0], "")
		d.version, _ = d.root.str("apiVersion")
		d.kind, _ = d.root.str("kind")
		if md := d.root.child("metadata"); md != nil {
			d.md = md
			d.name, _ = md.str("name")
			d.metadata(md, d.kind == "SLO" || d.kind == "AlertCondition")
		}
		switch {
		case d.version != APIVersion && d.version != APIVersionV1Alpha:
			d.refuse(d.root.line("apiVersion"), "apiVersion", fmt.Sprintf("want %s (or %s), got %q", APIVersion, APIVersionV1Alpha, d.version))
			d.root.skipAll()
			continue
		case d.version == APIVersionV1Alpha && d.kind != "SLO" && d.kind != "Service":
			d.refuse(d.root.line("kind"), "kind", fmt.Sprintf("%s has the kinds SLO and Service, got %q", APIVersionV1Alpha, d.kind))
			d.root.skipAll()
			continue
		case !contains([]string{"SLO", "SLI", "AlertPolicy", "AlertCondition", "AlertNotificationTarget", "DataSource", "Service"}, d.kind):
			d.refuse(d.root.line("kind"), "kind", fmt.Sprintf("want one of SLO, SLI, AlertPolicy, AlertCondition, AlertNotificationTarget, DataSource, Service; got %q", d.kind))
			d.root.skipAll()
			continue
		case d.name == "":
			d.refuse(d.root.line("metadata"), "metadata.name", "required")
		}
		out = append(out, d)
	}
}

var lineRE = regexp.MustCompile(`line (\d+)`)

func yamlLine(err error) int {
	if m := lineRE.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// metadata reads the descriptive metadata of a document (its name is
// read by the caller). fusebox annotations are read by the SLO and
// AlertCondition mappings (fusebox true), which refuse those they do not
// know; elsewhere they are refused here.
func (d *doc) metadata(md *obj, fusebox bool) {
	md.ignore("displayName", "not mapped: descriptive (fusebox names an SLO by metadata.name)")
	md.ignore("labels", "not mapped: descriptive")
	if ann := md.child("annotations"); ann != nil {
		for i := 0; i+1 < len(ann.n.Content); i += 2 {
			k := ann.n.Content[i]
			switch {
			case !strings.HasPrefix(k.Value, Prefix):
				ann.ignore(k.Value, "not mapped: another tool's annotation")
			case fusebox:
				ann.skip(k.Value)
			}
		}
	}
}

// annotations returns the fusebox annotations of md (by name after
// Prefix) and marks them read; the caller refuses those it does not use.
func annotations(md *obj) (map[string]annVal, *obj) {
	out := map[string]annVal{}
	if md == nil {
		return out, nil
	}
	_, v := md.key("annotations")
	if v == nil || v.Kind != yaml.MappingNode {
		return out, nil
	}
	ann := &obj{n: v, path: join(md.path, "annotations"), read: map[string]bool{}, d: md.d}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if name, ok := strings.CutPrefix(k.Value, Prefix); ok {
			out[name] = annVal{value: val.Value, line: k.Line, path: join(ann.path, k.Value)}
		}
	}
	return out, ann
}

type annVal struct {
	value string
	line  int
	path  string
}

// sloIn is one SLO document as read, before it is mapped to a kind.
type sloIn struct {
	d        *doc
	name     string
	service  string
	svcLine  int
	ann      map[string]annVal
	desc     string
	descLine int

	sli *sliIn

	target     float64
	hasTarget  bool
	targetPath string
	targetLine int
	op         string
	hasValue   bool
	value      float64
	objPath    string
	objLine    int

	window     time.Duration
	hasWindow  bool
	windowPath string
	windowLine int

	policies    []*condIn // nil: no alertPolicies
	hasPolicies bool
	policyPath  string
	policyLine  int
}

// sliIn is an SLI as read.
type sliIn struct {
	ratio     bool
	good, bad string // fusebox counts (metricSource spec.count) of a ratio
	total     string
	latency   float64 // bad's latency_threshold_ms
	metric    string  // threshold: spec.metric
	statistic string  // threshold: spec.statistic
	kind      string  // threshold: spec.kind (a kind with no counterpart)
	foreign   bool    // a metric source fusebox does not read (refused)
	line      int
	path      string
}

// condIn is one burn-rate alert condition as read.
type condIn struct {
	severity string
	rule     burnrate.Rule
	ok       bool
}

type importer struct {
	kinds registry.List
	idx   map[string]*doc
	conds map[*doc]*condIn
}

// readV1 reads an openslo/v1 SLO document.
func (im *importer) readV1(d *doc) *sloIn {
	in := &sloIn{d: d, name: d.name}
	in.ann, _ = annotations(d.md)
	spec := d.root.child("spec")
	if spec == nil {
		d.refuse(d.root.line("spec"), "spec", "required")
		return nil
	}
	in.desc, _ = spec.str("description")
	in.descLine = spec.line("description")
	in.service, _ = spec.str("service")
	in.svcLine = spec.line("service")
	// The SLI: inline or by reference.
	if ind := spec.child("indicator"); ind != nil {
		if imd := ind.child("metadata"); imd != nil {
			imd.skip("name")
			d.metadata(imd, false)
		}
		if is := ind.child("spec"); is != nil {
			in.sli = im.readSLISpec(d, is)
		} else {
			d.refuse(spec.line("indicator"), "spec.indicator.spec", "required")
		}
		if spec.has("indicatorRef") {
			d.refuse(spec.line("indicatorRef"), "spec.indicatorRef", "give indicator or indicatorRef, not both")
			spec.skip("indicatorRef")
		}
	} else if ref, ok := spec.str("indicatorRef"); ok {
		sd := im.idx["SLI/"+ref]
		if sd == nil {
			d.refuse(spec.line("indicatorRef"), "spec.indicatorRef", fmt.Sprintf("no SLI named %q in the files", ref))
		} else {
			sd.used = true
			if ss := sd.root.child("spec"); ss != nil {
				in.sli = im.readSLISpec(sd, ss)
			} else {
				sd.refuse(sd.root.line("spec"), "spec", "required")
			}
		}
	} else {
		d.refuse(spec.line("indicator"), "spec.indicator", "an SLO needs indicator or indicatorRef")
	}
	// timeWindow: exactly one rolling window.
	if tws, at := spec.list("timeWindow"); len(tws) > 0 {
		if len(tws) > 1 {
			d.refuse(tws[1].Line, at(1), "OpenSLO allows one time window")
		}
		if tw := d.item(tws[0], at(0)); tw != nil {
			if tw.has("calendar") {
				tw.skip("calendar")
				d.refuse(tw.line("calendar"), at(0)+".calendar", "calendar-aligned windows are not mapped: fusebox windows roll over event time")
			}
			if r, ok := tw.boolean("isRolling"); ok && !r {
				d.refuse(tw.line("isRolling"), at(0)+".isRolling", "only rolling windows are mapped")
			}
			if s, ok := tw.str("duration"); ok {
				w, err := parseShorthand(s)
				if err != nil {
					d.refuse(tw.line("duration"), at(0)+".duration", err.Error())
				} else {
					in.window, in.hasWindow, in.windowPath, in.windowLine = w, true, at(0)+".duration", tw.line("duration")
				}
			} else {
				d.refuse(tw.line("duration"), at(0)+".duration", "required")
			}
		}
	}
	im.budgeting(d, spec)
	// objectives: exactly one.
	objs, at := spec.list("objectives")
	if len(objs) == 0 {
		d.refuse(spec.line("objectives"), "spec.objectives", "required: one objective")
	}
	for i, n := range objs {
		o := d.item(n, at(i))
		if o == nil {
			continue
		}
		if i > 0 {
			o.skipAll()
			d.refuse(n.Line, at(i), "fusebox runs one objective per SLO: write one SLO per objective")
			continue
		}
		im.objective(in, o, at(i))
	}
	// alertPolicies: inline or by reference.
	pols, pat := spec.list("alertPolicies")
	if spec.has("alertPolicies") {
		in.hasPolicies, in.policyPath, in.policyLine = true, "spec.alertPolicies", spec.line("alertPolicies")
		in.policies = []*condIn{}
	}
	for i, n := range pols {
		p := d.item(n, pat(i))
		if p == nil {
			continue
		}
		if ref, ok := p.str("alertPolicyRef"); ok {
			pd := im.idx["AlertPolicy/"+ref]
			if pd == nil {
				d.refuse(p.line("alertPolicyRef"), pat(i)+".alertPolicyRef", fmt.Sprintf("no AlertPolicy named %q in the files", ref))
				continue
			}
			pd.used = true
			if c := im.policy(pd, pd.root.child("spec"), "spec"); c != nil {
				in.policies = append(in.policies, c)
			}
			continue
		}
		if k, ok := p.str("kind"); ok && k != "AlertPolicy" {
			d.refuse(p.line("kind"), pat(i)+".kind", "want AlertPolicy, got "+strconv.Quote(k))
		}
		if pmd := p.child("metadata"); pmd != nil {
			pmd.skip("name")
			d.metadata(pmd, false)
		}
		if c := im.policy(d, p.child("spec"), pat(i)+".spec"); c != nil {
			in.policies = append(in.policies, c)
		}
	}
	return in
}

// budgeting checks spec.budgetingMethod: Occurrences (fusebox counts
// calls) is mapped, Timeslices is not.
func (im *importer) budgeting(d *doc, spec *obj) {
	bm, ok := spec.str("budgetingMethod")
	switch {
	case !ok && d.version == APIVersion:
		d.refuse(spec.line("budgetingMethod"), "spec.budgetingMethod", "required (Occurrences)")
	case ok && bm == "Timeslices":
		d.refuse(spec.line("budgetingMethod"), "spec.budgetingMethod", "Timeslices is not mapped: fusebox judges the calls of each window (Occurrences)")
	case ok && bm != "Occurrences":
		d.refuse(spec.line("budgetingMethod"), "spec.budgetingMethod", "want Occurrences or Timeslices, got "+strconv.Quote(bm))
	}
}

// objective reads the one objective of an SLO.
func (im *importer) objective(in *sloIn, o *obj, path string) {
	d := in.d
	in.objPath, in.objLine = path, o.n.Line
	o.ignore("displayName", "not mapped: descriptive")
	t, hasT := o.num("target")
	tp, hasTP := o.num("targetPercent")
	switch {
	case hasT && hasTP:
		d.refuse(o.line("targetPercent"), path+".targetPercent", "give target or targetPercent, not both")
	case hasT:
		in.target, in.hasTarget, in.targetPath, in.targetLine = t, true, path+".target", o.line("target")
	case hasTP:
		in.target, in.hasTarget, in.targetPath, in.targetLine = tp/100, true, path+".targetPercent", o.line("targetPercent")
	default:
		d.refuse(o.n.Line, path+".target", "required: target (or targetPercent)")
	}
	if in.hasTarget && !(in.target >= 0 && in.target < 1) {
		d.refuse(in.targetLine, in.targetPath, fmt.Sprintf("must be in [0, 1) (targetPercent in [0, 100)), got %v", in.target))
		in.hasTarget = false
	}
	in.op, _ = o.str("op")
	in.value, in.hasValue = o.num("value")
	for _, k := range []string{"timeSliceTarget", "timeSliceWindow"} {
		if o.has(k) {
			o.skip(k)
			d.refuse(o.line(k), path+"."+k, "Timeslices is not mapped: fusebox judges the calls of each window (Occurrences)")
		}
	}
}

// readSLISpec reads an SLI's spec (v1): thresholdMetric or ratioMetric.
func (im *importer) readSLISpec(d *doc, spec *obj) *sliIn {
	s := &sliIn{line: spec.n.Line, path: spec.path}
	spec.ignore("description", "not mapped: descriptive")
	th := spec.child("thresholdMetric")
	ra := spec.child("ratioMetric")
	switch {
	case th != nil && ra != nil:
		d.refuse(spec.line("ratioMetric"), join(spec.path, "ratioMetric"), "give thresholdMetric or ratioMetric, not both")
		ra.skipAll()
		fallthrough
	case th != nil:
		src := im.source(d, th, s)
		if src != nil {
			s.metric, _ = src.str("metric")
			s.statistic, _ = src.str("statistic")
			s.kind, _ = src.str("kind")
		}
	case ra != nil:
		s.ratio = true
		ra.skip("counter") // fusebox counts events per window: counter or gauge, the same
		if ra.has("raw") || ra.has("rawType") {
			ra.skip("raw", "rawType")
			d.refuse(ra.line("raw"), join(ra.path, "raw"), "a precomputed ratio is not mapped: fusebox counts the calls itself (good or bad over total)")
		}
		part := func(name string) (string, bool) {
			h := ra.child(name)
			if h == nil {
				return "", false
			}
			src := im.source(d, h, s)
			if src == nil {
				return "", true
			}
			c, _ := src.str("count")
			if name == "bad" {
				s.latency, _ = src.num("latency_threshold_ms")
			}
			return c, true
		}
		var hasGood, hasBad bool
		s.good, hasGood = part("good")
		s.bad, hasBad = part("bad")
		s.total, _ = part("total")
		if hasGood == hasBad {
			d.refuse(ra.n.Line, ra.path, "give good or bad (with total)")
		}
		if !ra.has("total") {
			d.refuse(ra.n.Line, join(ra.path, "total"), "required")
		}
		if !s.foreign {
			im.checkCounts(d, ra, s)
		}
	default:
		d.refuse(spec.n.Line, spec.path, "an SLI needs thresholdMetric or ratioMetric")
		return nil
	}
	return s
}

// checkCounts checks the fusebox counts of a ratio SLI: errors (or
// good_calls) over calls, or corrections over responses.
func (im *importer) checkCounts(d *doc, ra *obj, s *sliIn) {
	ok := s.bad == countErrors && s.total == countCalls ||
		s.good == countGood && s.total == countCalls ||
		s.bad == countCorrections && s.total == countResponses
	if !ok {
		d.refuse(ra.n.Line, ra.path, fmt.Sprintf("fusebox counts bad %s or good %s over total %s, or bad %s over total %s; got good %q, bad %q, total %q",
			countErrors, countGood, countCalls, countCorrections, countResponses, s.good, s.bad, s.total))
	}
}

// source reads h's metricSource: of type fusebox, it returns its spec;
// another type (a query of Prometheus, Datadog, ...) is refused as a whole:
// fusebox measures the spans it reads, it runs no query.
func (im *importer) source(d *doc, h *obj, s *sliIn) *obj {
	ms := h.child("metricSource")
	if ms == nil {
		d.refuse(h.n.Line, join(h.path, "metricSource"), "required")
		return nil
	}
	typ, _ := ms.str("type")
	if typ != SourceType {
		ms.skipAll()
		what := "a query"
		if typ != "" {
			what = "a " + typ + " query"
		}
		d.refuse(ms.n.Line, ms.path, fmt.Sprintf("%s is not mapped: fusebox measures calls, errors, latencies and corrections from the spans it reads (metricSource type %s); with partial results allowed, the SLO is imported over fusebox's own measure", what, SourceType))
		s.foreign = true
		return nil
	}
	ms.skip("metricSourceRef")
	return ms.child("spec")
}

// policy reads an AlertPolicy's spec (in d, at path) and its one
// condition.
func (im *importer) policy(d *doc, spec *obj, path string) *condIn {
	if spec == nil {
		d.refuse(0, path, "required")
		return nil
	}
	spec.ignore("description", "not mapped: descriptive")
	if b, ok := spec.boolean("alertWhenBreaching"); ok && !b {
		d.refuse(spec.line("alertWhenBreaching"), join(path, "alertWhenBreaching"), "fusebox breaches whenever the condition holds: false is not mapped")
	}
	for _, k := range []string{"alertWhenResolved", "alertWhenNoData"} {
		if b, ok := spec.boolean(k); ok && b {
			d.note(spec.line(k), join(path, k), "not mapped: fusebox writes ok and insufficient_data verdicts whatever it says")
		}
	}
	targets, tat := spec.list("notificationTargets")
	for i, n := range targets {
		t := d.item(n, tat(i))
		if t == nil {
			continue
		}
		if ref, ok := t.str("targetRef"); ok {
			td := im.idx["AlertNotificationTarget/"+ref]
			if td != nil && isFuseboxTarget(td) {
				td.used = true
				continue
			}
			d.note(t.line("targetRef"), tat(i)+".targetRef", "not mapped: fusebox's breach verdicts go to its verdict topic and its breaker (fuse commands), not to notification targets")
			continue
		}
		t.skipAll()
		d.note(n.Line, tat(i), "not mapped: fusebox's breach verdicts go to its verdict topic and its breaker (fuse commands), not to notification targets")
	}
	conds, cat := spec.list("conditions")
	if len(conds) != 1 {
		d.refuse(spec.line("conditions"), join(path, "conditions"), fmt.Sprintf("want exactly one condition (OpenSLO allows one), got %d", len(conds)))
		if len(conds) == 0 {
			return nil
		}
	}
	c := d.item(conds[0], cat(0))
	if c == nil {
		return nil
	}
	for i := 1; i < len(conds); i++ {
		if o := d.item(conds[i], cat(i)); o != nil {
			o.skipAll()
		}
	}
	if ref, ok := c.str("conditionRef"); ok {
		cd := im.idx["AlertCondition/"+ref]
		if cd == nil {
			d.refuse(c.line("conditionRef"), cat(0)+".conditionRef", fmt.Sprintf("no AlertCondition named %q in the files", ref))
			return nil
		}
		cd.used = true
		if got, done := im.conds[cd]; done {
			return got
		}
		ann, _ := annotations(cd.md)
		got := im.condition(cd, cd.root.child("spec"), "spec", ann, "metadata.annotations")
		im.conds[cd] = got
		return got
	}
	if k, ok := c.str("kind"); ok && k != "AlertCondition" {
		d.refuse(c.line("kind"), cat(0)+".kind", "want AlertCondition, got "+strconv.Quote(k))
	}
	cmd := c.child("metadata")
	var ann map[string]annVal
	if cmd != nil {
		cmd.skip("name")
		d.metadata(cmd, true)
		ann, _ = annotations(cmd)
	}
	return im.condition(d, c.child("spec"), cat(0)+".spec", ann, cat(0)+".metadata.annotations")
}

// isFuseboxTarget reports whether the AlertNotificationTarget d is
// fusebox itself (spec.target fusebox, as export writes it). Either way
// the document is read whole: a target does not change what fusebox
// checks.
func isFuseboxTarget(d *doc) bool {
	if d.target == nil {
		spec := d.root.child("spec")
		t, _ := spec.str("target")
		spec.skipAll()
		is := t == SourceType
		d.target = &is
	}
	return *d.target
}

// condition reads an AlertCondition's spec: a burnrate condition whose
// severity is page or ticket.
func (im *importer) condition(d *doc, spec *obj, path string, ann map[string]annVal, annPath string) *condIn {
	if spec == nil {
		d.refuse(0, path, "required")
		return nil
	}
	c := &condIn{ok: true}
	spec.ignore("description", "not mapped: descriptive")
	sev, ok := spec.str("severity")
	switch {
	case !ok:
		d.refuse(spec.n.Line, join(path, "severity"), "required: page or ticket")
		c.ok = false
	case sev != severityPage && sev != severityTicket:
		d.refuse(spec.line("severity"), join(path, "severity"), fmt.Sprintf("want page or ticket (fusebox's two burn-rate verdicts), got %q", sev))
		c.ok = false
	}
	c.severity = sev
	cond := spec.child("condition")
	if cond == nil {
		d.refuse(spec.n.Line, join(path, "condition"), "required")
		return nil
	}
	cp := cond.path
	if k, ok := cond.str("kind"); ok && k != "burnrate" {
		d.refuse(cond.line("kind"), join(cp, "kind"), "want burnrate, got "+strconv.Quote(k))
		c.ok = false
	}
	im.conditionOp(d, cond, c)
	if f, ok := cond.num("threshold"); ok {
		c.rule.Factor = f
	} else {
		d.refuse(cond.n.Line, join(cp, "threshold"), "required: the burn rate factor")
		c.ok = false
	}
	if s, ok := cond.str("lookbackWindow"); ok {
		long, err := parseShorthand(s)
		if err != nil {
			d.refuse(cond.line("lookbackWindow"), join(cp, "lookbackWindow"), err.Error())
			c.ok = false
		}
		c.rule.Long = long
		if a, ok := ann[annLong]; ok {
			// The exact long window, when it is no whole number of
			// minutes: export writes lookbackWindow rounded up to the
			// minute. One that no longer rounds to lookbackWindow (an
			// edited window) is refused, not dropped: the rule keeps
			// lookbackWindow.
			exact, perr := time.ParseDuration(a.value)
			up := exact
			if up%time.Minute != 0 {
				up = exact.Truncate(time.Minute) + time.Minute
			}
			switch {
			case perr != nil || exact <= 0:
				d.refuse(a.line, a.path, fmt.Sprintf("want a positive duration such as 90s, got %q", a.value))
			case err != nil:
			case up != long:
				sh, _ := shorthand(up)
				d.refuse(a.line, a.path, fmt.Sprintf("%s goes with lookbackWindow %s, but lookbackWindow is %s: edit one of them, or drop the annotation (lookbackWindow is then the long window)", a.value, sh, s))
			default:
				c.rule.Long = exact
			}
		}
	} else {
		d.refuse(cond.n.Line, join(cp, "lookbackWindow"), "required: the long window")
		c.ok = false
	}
	if s, ok := cond.str("alertAfter"); ok && s != "0m" && s != "0" {
		d.refuse(cond.line("alertAfter"), join(cp, "alertAfter"), "a hold-down is not mapped: fusebox breaches as soon as the long and the short window both burn (alertAfter 0m)")
	}
	if a, ok := ann[annShort]; ok {
		short, err := time.ParseDuration(a.value)
		if err != nil || short <= 0 {
			d.refuse(a.line, a.path, fmt.Sprintf("want a positive duration such as 5m, got %q", a.value))
			c.ok = false
		}
		c.rule.Short = short
	} else {
		// The SRE workbook's short windows are 1/12 of the long ones.
		c.rule.Short = c.rule.Long / 12
	}
	for k, a := range ann {
		if k != annShort && k != annLong {
			d.refuse(a.line, a.path, "not a fusebox annotation of an AlertCondition (it has short_window and long_window)")
		}
	}
	return c
}

// conditionOp reads a burnrate condition's op: gt is what fusebox does
// (it breaches when the burn rate exceeds the factor); gte is taken as gt
// with a note (fusebox compares strictly: a burn rate exactly at the
// factor does not breach); lt and lte would alert on a low burn rate and
// are refused. A condition without op is taken as gt with a note: the
// OpenSLO v1 README had no op on AlertConditions before it made op
// required for kind burnrate, and files written then (and Sloth-era
// tools) leave it out; a burn-rate alert means "burning too fast".
func (im *importer) conditionOp(d *doc, cond *obj, c *condIn) {
	p := join(cond.path, "op")
	op, ok := cond.str("op")
	switch {
	case !ok: // absent or null (a value that is no string is refused by str)
		d.note(cond.n.Line, p, "missing (OpenSLO v1 requires it for kind burnrate): read as gt, fusebox breaches when the burn rate exceeds the threshold")
	case op == opBurn:
	case op == "gte":
		d.note(cond.line("op"), p, "read as gt: fusebox compares strictly (a burn rate exactly at the threshold does not breach)")
	case op == "lt" || op == "lte":
		d.refuse(cond.line("op"), p, fmt.Sprintf("%s is not mapped: fusebox breaches when the burn rate exceeds the threshold (op gt), not when it is below it", op))
		c.ok = false
	default:
		d.refuse(cond.line("op"), p, fmt.Sprintf("want gt (or gte; OpenSLO's ops are lte, gte, lt, gt), got %q", op))
		c.ok = false
	}
}

// readV1Alpha reads an openslo/v1alpha SLO document (as Sloth reads it):
// objectives[0].ratioMetrics or indicator.thresholdMetric, timeWindows of
// count and unit.
func (im *importer) readV1Alpha(d *doc) *sloIn {
	in := &sloIn{d: d, name: d.name}
	in.ann, _ = annotations(d.md)
	spec := d.root.child("spec")
	if spec == nil {
		d.refuse(d.root.line("spec"), "spec", "required")
		return nil
	}
	in.desc, _ = spec.str("description")
	in.descLine = spec.line("description")
	in.service, _ = spec.str("service")
	in.svcLine = spec.line("service")
	tws, at := spec.list("timeWindows")
	if len(tws) > 1 {
		d.refuse(tws[1].Line, at(1), "one time window is mapped")
	}
	if len(tws) > 0 {
		if tw := d.item(tws[0], at(0)); tw != nil {
			if tw.has("calendar") {
				tw.skip("calendar")
				d.refuse(tw.line("calendar"), at(0)+".calendar", "calendar-aligned windows are not mapped: fusebox windows roll over event time")
			}
			if r, ok := tw.boolean("isRolling"); ok && !r {
				d.refuse(tw.line("isRolling"), at(0)+".isRolling", "only rolling windows are mapped")
			}
			n, okN := tw.num("count")
			u, okU := tw.str("unit")
			units := map[string]string{"Minute": "m", "Hour": "h", "Day": "d", "Week": "w"}
			switch {
			case !okN || !okU:
				d.refuse(tw.n.Line, at(0), "want count and unit")
			case units[u] == "":
				d.refuse(tw.line("unit"), at(0)+".unit", fmt.Sprintf("want Minute, Hour, Day or Week, got %q", u))
			default:
				w, err := parseShorthand(strconv.FormatFloat(n, 'f', -1, 64) + units[u])
				if err != nil {
					d.refuse(tw.line("count"), at(0)+".count", err.Error())
				} else {
					in.window, in.hasWindow, in.windowPath, in.windowLine = w, true, at(0)+".count", tw.line("count")
				}
			}
		}
	}
	im.budgeting(d, spec)
	var thr *sliIn
	if ind := spec.child("indicator"); ind != nil {
		if th := ind.child("thresholdMetric"); th != nil {
			thr = &sliIn{line: th.n.Line, path: th.path}
			im.alphaSource(d, th, thr, false)
		}
	}
	objs, oat := spec.list("objectives")
	if len(objs) == 0 {
		d.refuse(spec.line("objectives"), "spec.objectives", "required: one objective")
	}
	for i, n := range objs {
		o := d.item(n, oat(i))
		if o == nil {
			continue
		}
		if i > 0 {
			o.skipAll()
			d.refuse(n.Line, oat(i), "fusebox runs one objective per SLO: write one SLO per objective")
			continue
		}
		im.objective(in, o, oat(i))
		if rm := o.child("ratioMetrics"); rm != nil {
			s := &sliIn{ratio: true, line: rm.n.Line, path: rm.path}
			rm.skip("incremental")
			for _, part := range []struct {
				name string
				to   *string
			}{{"good", &s.good}, {"bad", &s.bad}, {"total", &s.total}} {
				if m := rm.child(part.name); m != nil {
					*part.to = im.alphaSource(d, m, s, true)
				}
			}
			if (s.good == "") == (s.bad == "") && !s.foreign {
				d.refuse(rm.n.Line, rm.path, "give good or bad (with total)")
			}
			if !s.foreign {
				im.checkCounts(d, rm, s)
			}
			in.sli = s
		}
	}
	if in.sli == nil {
		in.sli = thr
	} else if thr != nil {
		d.refuse(thr.line, thr.path, "give ratioMetrics or a thresholdMetric, not both")
	}
	if in.sli == nil {
		d.refuse(spec.line("objectives"), "spec.objectives[0].ratioMetrics", "an SLO needs objectives[0].ratioMetrics or indicator.thresholdMetric")
	}
	return in
}

// alphaSource reads a v1alpha metric (source, queryType, query): source
// fusebox names a count (ratio) or a metric (threshold) in query; any
// other source is refused as a whole.
func (im *importer) alphaSource(d *doc, m *obj, s *sliIn, ratio bool) string {
	src, _ := m.str("source")
	if src != SourceType {
		m.skipAll()
		d.refuse(m.n.Line, m.path, fmt.Sprintf("a %s query is not mapped: fusebox measures calls, errors, latencies and corrections from the spans it reads (source %s); with partial results allowed, the SLO is imported over fusebox's own measure", src, SourceType))
		s.foreign = true
		return ""
	}
	m.skip("queryType")
	q, _ := m.str("query")
	if !ratio {
		s.metric = q
	}
	return q
}

// leftOver notes the documents no SLO used.
func (im *importer) leftOver(d *doc) {
	if d.root == nil || d.used {
		return
	}
	switch d.kind {
	case "SLI", "AlertPolicy", "AlertCondition":
		d.root.skipAll()
		d.refuse(d.root.line("kind"), "kind", "no SLO of the files refers to this "+d.kind+": not imported")
	case "AlertNotificationTarget":
		if isFuseboxTarget(d) {
			d.root.skipAll()
			return
		}
		d.root.skipAll()
		d.note(d.root.line("kind"), "kind", "not mapped: fusebox's breach verdicts go to its verdict topic and its breaker (fuse commands)")
	case "DataSource":
		d.root.skipAll()
		d.note(d.root.line("kind"), "kind", "not mapped: fusebox reads spans and corrections from Kafka (the SLO file's kafka and topics sections)")
	case "Service":
		d.root.skipAll()
		d.note(d.root.line("kind"), "kind", "not mapped: a Service groups SLOs; an SLO's spec.service selects the keys of that service")
	}
}

// built is one mapped SLO: its entry of the fusebox file and where it
// came from.
type built struct {
	d     *doc
	name  string
	match schemas.Match
	kind  processors.Kind
	cfg   processors.Config
}

// kindOf says which fusebox kind an SLO is: the annotation fusebox.dev/kind
// when there is one (it must agree with the SLI), else the SLI's.
func (im *importer) kindOf(in *sloIn) (processors.Kind, bool) {
	d := in.d
	fromSLI := ""
	if s := in.sli; s != nil {
		switch {
		case s.ratio && s.bad == countCorrections:
			fromSLI = corrections.Name
		case s.ratio:
			fromSLI = burnrate.Name
		case s.kind != "":
			fromSLI = s.kind
		case s.statistic == statKS:
			fromSLI = drift.Name
		case s.statistic == statDecline:
			fromSLI = decay.Name
		case s.statistic == statStdDev:
			fromSLI = scaling.Name
		case s.statistic == "":
			fromSLI = tail.Name
		default:
			d.refuse(s.line, s.path, fmt.Sprintf("unknown statistic %q (fusebox has %s, %s, %s)", s.statistic, statKS, statDecline, statStdDev))
			return processors.Kind{}, false
		}
	}
	name := fromSLI
	if a, ok := in.ann[annKind]; ok {
		if fromSLI != "" && a.value != fromSLI && !(in.sli != nil && in.sli.foreign) {
			d.refuse(a.line, a.path, fmt.Sprintf("says %s, but the SLI is one of %s", a.value, fromSLI))
			return processors.Kind{}, false
		}
		name = a.value
	}
	if name == "" {
		return processors.Kind{}, false
	}
	k, ok := im.kinds.Lookup(name)
	if !ok {
		line, path := 0, "spec.indicator"
		if a, ok := in.ann[annKind]; ok {
			line, path = a.line, a.path
		}
		d.refuse(line, path, fmt.Sprintf("unknown fusebox kind %q (kinds: %s)", name, strings.Join(im.kinds.Names(), ", ")))
	}
	return k, ok
}

// mapped lists, per kind, the fields the OpenSLO fields carry: an
// annotation may not set them (edit the OpenSLO field). alpha and
// max_rate are carried by the objective's target and also by their
// annotation, so that they survive the round trip bit for bit; window by
// spec.timeWindow, or its annotation when it is no whole number of
// minutes.
var mapped = map[string][]string{
	tail.Name:        {"metric", "p", "budget"},
	drift.Name:       {"metric", "min_effect"},
	decay.Name:       {"metric", "limit"},
	scaling.Name:     {"stddev_budget_ms"},
	corrections.Name: {},
	burnrate.Name:    {"target", "latency_threshold_ms", "page", "ticket"},
}

// build maps one SLO to its kind's configuration.
func (im *importer) build(in *sloIn) (built, bool) {
	d := in.d
	k, ok := im.kindOf(in)
	if !ok {
		return built{}, false
	}
	b := built{d: d, name: in.name, kind: k, cfg: k.Default()}
	// The match: the annotation, else spec.service.
	if a, ok := in.ann[annMatch]; ok {
		if err := yaml.Unmarshal([]byte(a.value), &b.match); err != nil {
			d.refuse(a.line, a.path, "want a fusebox match such as {service: [chat]}: "+yamlReason(err))
		}
		switch {
		case len(b.match.Service) == 1 && in.service != b.match.Service[0]:
			d.refuse(in.svcLine, "spec.service", fmt.Sprintf("%q, but annotation %s%s selects service %q: edit one of them", in.service, Prefix, annMatch, b.match.Service[0]))
		case len(b.match.Service) != 1 && in.service != noService:
			d.refuse(in.svcLine, "spec.service", fmt.Sprintf("%q, but annotation %s%s selects services %v (spec.service %q): edit one of them", in.service, Prefix, annMatch, b.match.Service, noService))
		}
	} else if in.service != "" {
		b.match.Service = []string{in.service}
	}
	// The other fusebox annotations: the kind's fields.
	var order []string
	vals := map[string]string{}
	for name, a := range in.ann {
		switch name {
		case annKind, annMatch:
			continue
		case annName:
			// The fusebox name, when export slugged it: it must still
			// be one export would write metadata.name as.
			if a.value == "" || !nameFits(a.value, in.name) {
				want, _ := slug(a.value)
				d.refuse(a.line, a.path, fmt.Sprintf("the fusebox name %q goes with metadata.name %q (or %q), but metadata.name is %q: edit one of them, or drop the annotation", a.value, want, hashed(a.value), in.name))
				continue
			}
			b.name = a.value
			continue
		}
		if contains(mapped[k.Name], name) {
			d.refuse(a.line, a.path, "this field is mapped to an OpenSLO field: edit that one")
			continue
		}
		if name == "window" && in.hasWindow {
			d.refuse(a.line, a.path, "the window is also spec.timeWindow: keep one")
			continue
		}
		order = append(order, name)
		vals[name] = a.value
	}
	sort.Strings(order)
	for key, reason := range decodeFields(b.cfg, vals, order) {
		if key == "" {
			d.refuse(0, "metadata.annotations", reason)
			continue
		}
		a := in.ann[key]
		d.refuse(a.line, a.path, reason)
	}
	im.apply(in, &b)
	return b, true
}

// apply sets the fields the OpenSLO fields map to.
func (im *importer) apply(in *sloIn, b *built) {
	d := in.d
	ann := func(key string) []float64 {
		var out []float64
		if a, ok := in.ann[key]; ok {
			if v, err := strconv.ParseFloat(a.value, 64); err == nil {
				out = append(out, v)
			}
		}
		return out
	}
	needOp := func(want string) bool {
		switch {
		case in.op == "":
			d.refuse(in.objLine, in.objPath+".op", "required: "+want)
			return false
		case in.op != want:
			d.refuse(in.objLine, in.objPath+".op", fmt.Sprintf("want %s for a %s SLO, got %q", want, b.kind.Name, in.op))
			return false
		case !in.hasValue:
			d.refuse(in.objLine, in.objPath+".value", "required")
			return false
		}
		return true
	}
	noOp := func() {
		if in.op != "" || in.hasValue {
			d.refuse(in.objLine, in.objPath+".op", "a ratio SLI's objective has no op or value")
		}
	}
	window := func(w *time.Duration) {
		if in.hasWindow {
			*w = in.window
		}
	}
	metric := func(m *processors.Metric) {
		if s := in.sli; s != nil && s.metric != "" {
			*m = processors.Metric(s.metric)
		}
	}
	switch c := b.cfg.(type) {
	case *tail.Config:
		metric(&c.Metric)
		if needOp("lte") {
			c.Budget = in.value
		}
		if in.hasTarget {
			c.P = in.target
		}
		window(&c.Window)
	case *drift.Config:
		metric(&c.Metric)
		if needOp("lt") {
			v := in.value
			c.MinEffect = &v
		}
		if in.hasTarget {
			// Alpha 0 (from false_alarms) exports as 1 - the derived
			// level: it comes back as 0, not as that level set.
			derived := *c
			derived.Alpha = 0
			if 1-derived.KSAlpha() == in.target {
				c.Alpha = 0
			} else {
				c.Alpha = complement(in.target, append(ann("alpha"), drift.DefaultConfig().Alpha)...)
			}
		}
		window(&c.Window)
	case *decay.Config:
		metric(&c.Metric)
		if needOp("gte") {
			c.Limit = in.value
		}
		if in.hasTarget {
			c.Alpha = complement(in.target, append(ann("alpha"), decay.DefaultConfig().Alpha)...)
		}
		window(&c.Window)
	case *scaling.Config:
		if s := in.sli; s != nil && s.metric != "" && s.metric != string(processors.MetricDuration) {
			d.refuse(s.line, s.path, "scaling measures duration_ms, got "+s.metric)
		}
		if needOp("lte") {
			c.StdDevBudgetMs = in.value
		}
		if in.hasTarget && in.target != 0 {
			d.refuse(in.targetLine, in.targetPath, "scaling gives hints, not an error budget: its target is 0")
		}
		window(&c.Window)
	case *corrections.Config:
		noOp()
		if in.hasTarget {
			c.MaxRate = complement(in.target, append(ann("max_rate"), corrections.DefaultConfig().MaxRate)...)
		}
		window(&c.Window)
	case *burnrate.Config:
		noOp()
		if in.hasTarget {
			c.Target = in.target
		}
		if s := in.sli; s != nil {
			c.LatencyThresholdMs = s.latency
		}
		if in.hasWindow && in.window != 30*24*time.Hour {
			d.note(in.windowLine, in.windowPath, "not mapped: fusebox has no budget period; the burn-rate rules (the AlertConditions, or the SRE workbook's for 30 days when there are none) say when it breaches")
		}
		if in.hasPolicies {
			c.Page, c.Ticket = []burnrate.Rule{}, []burnrate.Rule{}
			for _, p := range in.policies {
				switch {
				case !p.ok:
				case p.severity == severityPage:
					c.Page = append(c.Page, p.rule)
				case p.severity == severityTicket:
					c.Ticket = append(c.Ticket, p.rule)
				}
			}
		}
	default:
		// A kind without counterpart: the annotations carry it; the
		// objective is a placeholder.
		noOp()
	}
	if _, isBurn := b.cfg.(*burnrate.Config); !isBurn && in.hasPolicies {
		d.refuse(in.policyLine, in.policyPath, "only burn-rate SLOs have alert policies in fusebox (its breaker acts on every SLO's breaches)")
	}
	if in.sli != nil && in.sli.ratio != isRatio(b.kind.Name) && !in.sli.foreign {
		d.refuse(in.sli.line, in.sli.path, fmt.Sprintf("a %s SLO has a %s SLI", b.kind.Name, map[bool]string{true: "ratioMetric", false: "thresholdMetric"}[isRatio(b.kind.Name)]))
	}
	if in.desc != "" && in.desc != b.cfg.Summary() {
		d.note(in.descLine, "spec.description", "not mapped: descriptive")
	}
}

func isRatio(kind string) bool { return kind == burnrate.Name || kind == corrections.Name }

// writeFile writes the mapped SLOs as a fusebox SLO file.
func writeFile(slos []built) ([]byte, error) {
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, b := range slos {
		e := &yaml.Node{Kind: yaml.MappingNode}
		add := func(k string, v *yaml.Node) {
			e.Content = append(e.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, v)
		}
		add("name", &yaml.Node{Kind: yaml.ScalarNode, Value: b.name, Style: quoteIfNeeded(b.name)})
		if m, err := matchNode(b.match); err != nil {
			return nil, err
		} else if m != nil {
			add("match", m)
		}
		sec, err := sectionNode(b.kind, b.cfg)
		if err != nil {
			return nil, err
		}
		add(b.kind.Name, sec)
		list.Content = append(list.Content, e)
	}
	root := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "slos"}, list}}
	if len(slos) == 0 {
		list.Style = yaml.FlowStyle
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func quoteIfNeeded(s string) yaml.Style {
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil || v != s {
		return yaml.DoubleQuotedStyle
	}
	return 0
}

// matchNode writes m's lists in flow style, leaving out the absent ones
// (nil; an empty list is kept: it hashes differently); nil for a match
// with no list.
func matchNode(m schemas.Match) (*yaml.Node, error) {
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, f := range []struct {
		k string
		v []string
	}{{"tenant", m.Tenant}, {"service", m.Service}, {"model", m.Model}, {"variant", m.Variant}, {"operation", m.Operation}} {
		if f.v == nil {
			continue
		}
		var v yaml.Node
		if err := v.Encode(f.v); err != nil {
			return nil, err
		}
		flow(&v)
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: f.k}, &v)
	}
	if len(out.Content) == 0 {
		return nil, nil
	}
	return out, nil
}

// sectionNode writes cfg's fields that differ from the kind's default.
func sectionNode(k processors.Kind, cfg processors.Config) (*yaml.Node, error) {
	var n, def yaml.Node
	if err := n.Encode(cfg); err != nil {
		return nil, err
	}
	if err := def.Encode(k.Default()); err != nil {
		return nil, err
	}
	defs := map[string]string{}
	for i := 0; i+1 < len(def.Content); i += 2 {
		b, _ := yaml.Marshal(def.Content[i+1])
		defs[def.Content[i].Value] = string(b)
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(n.Content); i += 2 {
		b, _ := yaml.Marshal(n.Content[i+1])
		if defs[n.Content[i].Value] == string(b) {
			continue
		}
		v := n.Content[i+1]
		if v.Kind == yaml.SequenceNode && allScalars(v) {
			v.Style = yaml.FlowStyle
		}
		out.Content = append(out.Content, n.Content[i], v)
	}
	if len(out.Content) == 0 {
		out.Style = yaml.FlowStyle
	}
	return out, nil
}

func allScalars(n *yaml.Node) bool {
	for _, c := range n.Content {
		if c.Kind != yaml.ScalarNode {
			return false
		}
	}
	return true
}

// configProblems turns the errors of checking the imported file into
// problems of the SLO documents: "slos[2].tail.p" is the third SLO's
// (config.Error), as is "slos[2] name: reason" (config.WorkerConfig's). It
// returns the indices of the SLOs with a problem too.
func configProblems(err error, slos []built) (Problems, map[int]bool) {
	var out Problems
	bad := map[int]bool{}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	re := regexp.MustCompile(`^slos\[(\d+)\]\.?(.*)$`)
	for _, e := range errs {
		var ce *config.Error
		if !errors.As(e, &ce) {
			if m := workerRE.FindStringSubmatch(e.Error()); m != nil {
				if i, _ := strconv.Atoi(m[1]); i < len(slos) {
					b := slos[i]
					bad[i] = true
					out = append(out, &Problem{File: b.d.file, Document: b.d.index, Kind: "SLO", Name: b.d.name,
						Field: "(fusebox " + b.kind.Name + ")", Reason: m[2]})
					continue
				}
			}
			out = append(out, &Problem{File: "(imported)", Reason: e.Error()})
			continue
		}
		m := re.FindStringSubmatch(ce.Field)
		if m == nil {
			out = append(out, &Problem{File: "(imported)", Field: ce.Field, Reason: ce.Reason})
			continue
		}
		i, _ := strconv.Atoi(m[1])
		if i >= len(slos) {
			continue
		}
		b := slos[i]
		bad[i] = true
		out = append(out, &Problem{File: b.d.file, Document: b.d.index, Kind: "SLO", Name: b.d.name,
			Field: "(fusebox " + b.kind.Name + ") " + strings.TrimPrefix(m[2], b.kind.Name+"."), Reason: ce.Reason})
	}
	return out, bad
}

// workerRE matches config.WorkerConfig's errors of one SLO: "slos[2] NAME: REASON".
var workerRE = regexp.MustCompile(`^slos\[(\d+)\] [^:]*: (.*)$`)
