//go:build race

package layout

// raceBuild: this test binary has the race detector, so TestNestedModules
// runs the nested modules' tests with -race too.
const raceBuild = true
