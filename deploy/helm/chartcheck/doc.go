// Package chartcheck checks the Helm chart in deploy/helm/fusebox without
// a cluster: it lints and renders the chart with the Helm library (what
// `helm lint --strict` and `helm template` run), decodes every rendered
// object strictly into its Kubernetes API type (k8s.io/api, and the
// Prometheus operator's monitoring/v1 types for ServiceMonitor and
// PrometheusRule), so that a misspelt field or a wrong type is an error
// naming the object and the field, and checks that the objects refer to
// each other (selectors, Services, volumes, ports). Its tests also run
// `fusebox config check`, built from the checkout, on the config file the
// chart renders.
//
// It is a Go module of its own, so that Helm and the Kubernetes API types
// stay out of fusebox's module; scripts/test runs its tests as the part
// "helm" (docs/testing.md).
package chartcheck
