package observe

import "runtime/debug"

// The release version and VCS revision stamped by the linker, for builds
// where the build info has neither: a Docker build whose context has no
// .git, -buildvcs=false, `go build` of a source archive. The Dockerfile
// passes its VERSION and REVISION build arguments:
//
//	go build -ldflags "-X github.com/fusebox-dev/fusebox/internal/observe.version=v1.4.0 \
//	  -X github.com/fusebox-dev/fusebox/internal/observe.revision=$(git rev-parse HEAD)" ./cmd/fusebox
//
// Empty (the default) means not stamped.
var (
	version  string
	revision string
)

// Version is the release version of the binary: the one the linker
// stamped (see version above), else the main module's version from the
// build info (v1.4.0 for `go install github.com/fusebox-dev/fusebox/cmd/fusebox@v1.4.0`,
// "(devel)" for a build in a checkout), else "unknown". It is the version
// label of fusebox_build_info and what `fusebox version` prints.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "unknown"
}
