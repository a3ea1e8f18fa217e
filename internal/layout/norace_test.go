//go:build !race

package layout

// raceBuild: no race detector in this test binary (see race_test.go).
const raceBuild = false
