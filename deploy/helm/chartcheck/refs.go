package chartcheck

import (
	"errors"
	"fmt"
	"slices"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// CheckReferences checks what strict decoding cannot: that the objects
// fit together as the API server and the controllers need. A workload's
// selector matches its pod template; every Service, PodDisruptionBudget
// and ServiceMonitor selects the pods or Service it is for; every volume
// mount names a volume, every ConfigMap volume a rendered ConfigMap, every
// probe and Service port a container port; the StatefulSet's serviceName
// is a rendered headless Service. Each error names the object and the
// field.
func CheckReferences(objs []Object) error {
	var errs []error
	add := func(o Object, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", o, fmt.Sprintf(format, args...)))
	}
	byKind := map[string][]Object{}
	for _, o := range objs {
		byKind[o.Kind] = append(byKind[o.Kind], o)
	}
	names := func(kind string) []string {
		var out []string
		for _, o := range byKind[kind] {
			out = append(out, o.Name)
		}
		return out
	}
	var pods []podTemplate
	for _, o := range byKind["StatefulSet"] {
		s := o.Value.(*appsv1.StatefulSet)
		pods = append(pods, podTemplate{o, &s.Spec.Template})
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil || s.Spec.Selector == nil || sel.Empty() {
			add(o, "spec.selector %v: want a non-empty label selector (%v)", s.Spec.Selector, err)
		} else if !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			add(o, "spec.selector %s does not match spec.template.metadata.labels %v", sel, s.Spec.Template.Labels)
		}
		if !slices.Contains(names("Service"), s.Spec.ServiceName) {
			add(o, "spec.serviceName %q is not a rendered Service (%v)", s.Spec.ServiceName, names("Service"))
		}
		checkPodSpec(o, &s.Spec.Template.Spec, names("ConfigMap"), add)
	}
	matchesPods := func(o Object, field string, sel labels.Selector) {
		for _, p := range pods {
			if sel.Matches(labels.Set(p.spec.Labels)) {
				return
			}
		}
		add(o, "%s %s selects no rendered pod template", field, sel)
	}
	for _, o := range byKind["Service"] {
		s := o.Value.(*corev1.Service)
		if len(s.Spec.Selector) == 0 {
			add(o, "spec.selector is empty")
			continue
		}
		matchesPods(o, "spec.selector", labels.SelectorFromSet(s.Spec.Selector))
		for i, p := range s.Spec.Ports {
			if p.TargetPort.String() == "" || p.TargetPort.Type == 0 && p.TargetPort.IntVal == 0 {
				continue // defaults to port
			}
			if p.TargetPort.StrVal != "" && !podsHavePort(pods, p.TargetPort.StrVal) {
				add(o, "spec.ports[%d].targetPort %q is no container port name of the pods it selects", i, p.TargetPort.StrVal)
			}
		}
	}
	for _, o := range byKind["StatefulSet"] {
		s := o.Value.(*appsv1.StatefulSet)
		for _, svc := range byKind["Service"] {
			if svc.Name == s.Spec.ServiceName && svc.Value.(*corev1.Service).Spec.ClusterIP != corev1.ClusterIPNone {
				add(o, "spec.serviceName %q: a StatefulSet's governing Service must be headless (clusterIP: None)", s.Spec.ServiceName)
			}
		}
	}
	for _, o := range byKind["PodDisruptionBudget"] {
		p := o.Value.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || p.Spec.Selector == nil || sel.Empty() {
			add(o, "spec.selector %v: want a non-empty label selector (%v)", p.Spec.Selector, err)
			continue
		}
		matchesPods(o, "spec.selector", sel)
	}
	for _, o := range byKind["ServiceMonitor"] {
		sm := o.Value.(*monitoringv1.ServiceMonitor)
		sel, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector)
		if err != nil || sel.Empty() {
			add(o, "spec.selector %v: want a non-empty label selector (%v)", sm.Spec.Selector, err)
			continue
		}
		var selected []*corev1.Service
		for _, svc := range byKind["Service"] {
			s := svc.Value.(*corev1.Service)
			if sel.Matches(labels.Set(s.Labels)) {
				selected = append(selected, s)
			}
		}
		if len(selected) == 0 {
			add(o, "spec.selector %s selects no rendered Service", sel)
			continue
		}
		for _, s := range selected {
			if sm.Spec.JobLabel != "" && s.Labels[sm.Spec.JobLabel] == "" {
				add(o, "spec.jobLabel %q is not a label of Service %s", sm.Spec.JobLabel, s.Name)
			}
			for i, ep := range sm.Spec.Endpoints {
				if !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
					add(o, "spec.endpoints[%d].port %q is not a port name of Service %s", i, ep.Port, s.Name)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// checkPodSpec checks a pod template's internal references.
func checkPodSpec(o Object, spec *corev1.PodSpec, configMaps []string, add func(Object, string, ...any)) {
	vols := map[string]corev1.Volume{}
	for i, v := range spec.Volumes {
		if _, dup := vols[v.Name]; dup {
			add(o, "spec.template.spec.volumes[%d].name %q is not unique", i, v.Name)
		}
		vols[v.Name] = v
		if v.ConfigMap != nil && !slices.Contains(configMaps, v.ConfigMap.Name) {
			add(o, "spec.template.spec.volumes[%d] (%s): configMap %q is not a rendered ConfigMap (%v)", i, v.Name, v.ConfigMap.Name, configMaps)
		}
		if v.Secret != nil && v.Secret.SecretName == "" {
			add(o, "spec.template.spec.volumes[%d] (%s): secret.secretName is empty", i, v.Name)
		}
	}
	if len(spec.Containers) == 0 {
		add(o, "spec.template.spec.containers is empty")
	}
	for ci, c := range spec.Containers {
		path := fmt.Sprintf("spec.template.spec.containers[%d]", ci)
		if c.Name == "" || c.Image == "" {
			add(o, "%s: name %q and image %q must be set", path, c.Name, c.Image)
		}
		for i, m := range c.VolumeMounts {
			if _, ok := vols[m.Name]; !ok {
				add(o, "%s.volumeMounts[%d].name %q is not a volume of the pod", path, i, m.Name)
			}
		}
		ports := map[string]bool{}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		for _, pr := range []struct {
			field string
			probe *corev1.Probe
		}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
			if pr.probe == nil || pr.probe.HTTPGet == nil {
				continue
			}
			if p := pr.probe.HTTPGet.Port; p.StrVal != "" && !ports[p.StrVal] {
				add(o, "%s.%s.httpGet.port %q is not a port name of the container", path, pr.field, p.StrVal)
			}
		}
		for i, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && (e.ValueFrom.SecretKeyRef.Name == "" || e.ValueFrom.SecretKeyRef.Key == "") {
				add(o, "%s.env[%d] (%s): secretKeyRef needs a name and a key", path, i, e.Name)
			}
		}
	}
}

// podTemplate is a workload's pod template, for the selectors.
type podTemplate struct {
	owner Object
	spec  *corev1.PodTemplateSpec
}

// podsHavePort reports whether a container of a pod template names a port
// name.
func podsHavePort(pods []podTemplate, name string) bool {
	for _, p := range pods {
		for _, c := range p.spec.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == name {
					return true
				}
			}
		}
	}
	return false
}
