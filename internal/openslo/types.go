package openslo

// The OpenSLO v1 documents export writes (github.com/OpenSLO/OpenSLO,
// README "Specification", apiVersion openslo/v1). Field order follows the
// specification's own examples; import reads documents generically (see
// import.go), so that every field it does not read is named.

// APIVersion is the OpenSLO version export writes and import reads.
const APIVersion = "openslo/v1"

// APIVersionV1Alpha is OpenSLO's earlier version, the one Sloth reads
// (objectives[].ratioMetrics, timeWindows[].count and unit): import reads
// its SLO documents too.
const APIVersionV1Alpha = "openslo/v1alpha"

// Prefix is the annotation prefix of what OpenSLO has no field for
// ("fusebox.dev/alpha"): the statistical parameters of an SLO, its key
// match, its kind.
const Prefix = "fusebox.dev/"

// SourceType is the metricSource type of the SLIs export writes: fusebox
// measures them from the spans and corrections it reads, not by a query.
const SourceType = "fusebox"

// Reserved annotation names (after Prefix).
const (
	annKind  = "kind"         // the fusebox SLO kind: tail, burnrate, ...
	annMatch = "match"        // the SLO's match, flow YAML ({} for every key)
	annShort = "short_window" // an AlertCondition's short window (burnrate)
	annName  = "name"         // the SLO's fusebox name, when its metadata.name is its RFC 1123 slug
)

// document is one OpenSLO v1 document.
type document struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Metadata   metadata `yaml:"metadata"`
	Spec       any      `yaml:"spec"`
}

type metadata struct {
	Name        string            `yaml:"name"`
	DisplayName string            `yaml:"displayName,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

type sloSpec struct {
	Description     string       `yaml:"description,omitempty"`
	Service         string       `yaml:"service"`
	IndicatorRef    string       `yaml:"indicatorRef"`
	TimeWindow      []timeWindow `yaml:"timeWindow,omitempty"`
	BudgetingMethod string       `yaml:"budgetingMethod"`
	Objectives      []objective  `yaml:"objectives"`
	AlertPolicies   []policyRef  `yaml:"alertPolicies,omitempty"`
}

type timeWindow struct {
	Duration  string `yaml:"duration"`
	IsRolling bool   `yaml:"isRolling"`
}

type objective struct {
	DisplayName string   `yaml:"displayName,omitempty"`
	Op          string   `yaml:"op,omitempty"`
	Value       *float64 `yaml:"value,omitempty"`
	Target      float64  `yaml:"target"`
}

type policyRef struct {
	AlertPolicyRef string `yaml:"alertPolicyRef"`
}

type sliSpec struct {
	Description     string        `yaml:"description,omitempty"`
	ThresholdMetric *metricHolder `yaml:"thresholdMetric,omitempty"`
	RatioMetric     *ratioMetric  `yaml:"ratioMetric,omitempty"`
}

type metricHolder struct {
	MetricSource metricSource `yaml:"metricSource"`
}

type metricSource struct {
	Type string         `yaml:"type"`
	Spec map[string]any `yaml:"spec"`
}

type ratioMetric struct {
	Counter bool          `yaml:"counter"`
	Good    *metricHolder `yaml:"good,omitempty"`
	Bad     *metricHolder `yaml:"bad,omitempty"`
	Total   metricHolder  `yaml:"total"`
}

type alertPolicySpec struct {
	Description         string         `yaml:"description,omitempty"`
	AlertWhenNoData     bool           `yaml:"alertWhenNoData"`
	AlertWhenResolved   bool           `yaml:"alertWhenResolved"`
	AlertWhenBreaching  bool           `yaml:"alertWhenBreaching"`
	Conditions          []conditionRef `yaml:"conditions"`
	NotificationTargets []targetRef    `yaml:"notificationTargets"`
}

type conditionRef struct {
	ConditionRef string `yaml:"conditionRef"`
}

type targetRef struct {
	TargetRef string `yaml:"targetRef"`
}

type alertConditionSpec struct {
	Description string            `yaml:"description,omitempty"`
	Severity    string            `yaml:"severity"`
	Condition   burnRateCondition `yaml:"condition"`
}

// burnRateCondition is a burnrate AlertCondition's condition. Op is
// required for kind burnrate by the OpenSLO v1 README; export writes gt:
// fusebox's rule fires when the burn rate exceeds the factor
// (processors/burnrate compares long > factor and short > factor).
type burnRateCondition struct {
	Kind           string  `yaml:"kind"`
	Op             string  `yaml:"op"`
	Threshold      float64 `yaml:"threshold"`
	LookbackWindow string  `yaml:"lookbackWindow"`
	AlertAfter     string  `yaml:"alertAfter"`
}

type notificationTargetSpec struct {
	Description string `yaml:"description,omitempty"`
	Target      string `yaml:"target"`
}

// targetName is the AlertNotificationTarget export writes: fusebox itself
// (its verdicts, and the breaker's fuse commands). Import takes a
// reference to a target whose spec.target is SourceType without a note.
const targetName = "fusebox"
