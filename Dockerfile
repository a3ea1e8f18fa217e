# fusebox: one static binary in a distroless image.
#
#   docker build -t fusebox \
#     --build-arg VERSION=v1.4.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker run --rm fusebox version
#
# docker-compose.yml builds it for the `fusebox` (run) and `gen` services.

# Build stage: the Go toolchain the module asks for (go.mod: go 1.26).
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Module downloads are cached in their own layer: they change less often
# than the sources. The fuse module and its kafka-go adapter are modules of
# their own that go.mod replaces with ./fuse and ./fuse/kafkago: their
# go.mod files are part of the module graph.
COPY go.mod go.sum ./
COPY fuse/go.mod fuse/go.sum ./fuse/
COPY fuse/kafkago/go.mod fuse/kafkago/go.sum ./fuse/kafkago/
RUN go mod download
COPY . .
# The release version and commit, stamped into the binary by the linker
# (internal/observe's version and revision): `fusebox version` and the
# labels of fusebox_build_info. The build does not stamp from git
# (-buildvcs=false): a build context without .git, or with a checkout the
# image's git cannot read, would otherwise fail or say nothing. Default
# "dev" and "unknown".
ARG VERSION=dev
ARG REVISION=unknown
# CGO off: a static binary that needs no libc in the runtime image.
# -trimpath keeps build paths out of it.
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X github.com/fusebox-dev/fusebox/internal/observe.version=${VERSION} -X github.com/fusebox-dev/fusebox/internal/observe.revision=${REVISION}" \
      -o /out/fusebox ./cmd/fusebox

# Runtime stage: no shell, no package manager, a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/fusebox /usr/local/bin/fusebox
USER nonroot:nonroot
# /metrics, /healthz, /readyz (http.listen in the config).
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/fusebox"]
CMD ["help"]
